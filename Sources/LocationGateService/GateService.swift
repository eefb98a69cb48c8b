import EventLog
import Foundation
import LocationAuthorization
import Logging
import Metrics
import PostgresClient

/// The gating service without HTTP: ingest through the projection, gates from memory, state
/// as of a time or version, and history. The HTTP layer and the CLI both call this.
public final class GateService: Sendable {
    public let pool: PostgresConnectionPool
    public let log: EventLog
    /// Where reads that may lag go (a standby when one is configured).
    public let reads: StandbyReads
    /// The log on `reads`: history and state as of a version or time.
    let readLog: EventLog
    public let cache: DeviceStateCache
    public let features: FeatureCatalog
    public let keys: APIKeys
    public let apps: AppRegistry
    let logger: Logger
    /// Small appends share transactions (group commit); large batches go alone.
    let committer: GroupCommitter
    /// Batches of at most this many events go through group commit.
    static let groupCommitLimit = 100
    /// Group commits in flight at once, by default.
    public static let defaultGroupCommits = 4

    /// SPEC §5: at most 1,000 events in a batch.
    public static let maxBatchEvents = 1000
    /// SPEC §5: at most 10,000 devices in a gate query.
    public static let maxQueryDevices = 10_000

    private let eventsAppended = Counter(label: "locgate_events_appended_total")
    private let rejections = Counter(label: "locgate_event_batches_rejected_total")

    /// Whether this process's caches may answer (see `CacheCoherence`).
    public let coherence: CacheCoherence
    /// Change hints for the push streams, fed by the `CacheFollower`.
    public let changes = ChangeHub()
    /// Decoded states of `device_state_kinds`, for the dashboard's feature coverage.
    let stateKinds = StateKindCache()

    /// - Parameters:
    ///   - cacheByteBudget: the device cache's memory bound (`--cache-memory`).
    ///   - followsChanges: true when a `CacheFollower` runs beside the service (a server that
    ///     shares its database with other processes): caches then answer only while its
    ///     notifications are known to arrive. False for a process that is the only writer
    ///     (the CLI, single-process tests).
    ///   - maxQueuedEvents: events that may wait for a group commit; more are 503 `overloaded`.
    ///   - readPool: a streaming standby for history, state as of, analytics and the dashboard's
    ///     counts (`LOCGATE_READ_DATABASE_URL`); nil reads the primary.
    ///   - groupCommits: group-commit transactions in flight at once (`--group-commits`).
    public init(
        pool: PostgresConnectionPool, logger: Logger, cacheByteBudget: Int = DeviceStateCache.defaultByteBudget,
        followsChanges: Bool = false, maxQueuedEvents: Int = 20_000, readPool: PostgresConnectionPool? = nil,
        groupCommits: Int = GateService.defaultGroupCommits
    ) {
        let coherence = CacheCoherence(alwaysFollowing: !followsChanges)
        self.coherence = coherence
        self.pool = pool
        self.log = EventLog(pool: pool, logger: logger)
        self.reads = StandbyReads(primary: pool, standby: readPool)
        self.readLog = EventLog(pool: reads.pool, logger: logger)
        self.cache = DeviceStateCache(byteBudget: cacheByteBudget, coherence: coherence)
        self.features = FeatureCatalog(pool: pool, coherence: coherence)
        self.keys = APIKeys(pool: pool, coherence: coherence)
        self.apps = AppRegistry(pool: pool)
        self.logger = logger
        self.committer = GroupCommitter(
            pool: pool, maxInFlight: max(1, min(groupCommits, pool.size)), maxQueuedEvents: maxQueuedEvents,
            queueTimeout: pool.waitTimeout * 2)
    }

    /// Events waiting for a group commit now.
    public var queuedEvents: Int { committer.queuedEvents }

    // MARK: - Ingest

    /// Appends a batch (the body of `POST /v1/events`) atomically through the projection.
    public func ingest(appID: UUID, body: Data) async throws(ServiceError) -> [EventResult] {
        do {
            let submissions = try EventBatch.decode(body, maxEvents: Self.maxBatchEvents)
            return try await ingest(appID: appID, submissions: submissions)
        } catch {
            Counter(label: "locgate_rejections_total", dimensions: [("code", error.code.rawValue)]).increment()
            throw error
        }
    }

    /// Appends decoded submissions; used by `ingest(appID:body:)` and `locgate simulate`.
    public func ingest(appID: UUID, submissions: [EventSubmission]) async throws(ServiceError) -> [EventResult] {
        guard !submissions.isEmpty else { return [] }
        var decoded: [Int: LocationEvent] = [:]
        var newEvents: [NewEvent] = []
        newEvents.reserveCapacity(submissions.count)
        for (index, submission) in submissions.enumerated() {
            decoded[index] = submission.event
            newEvents.append(NewEvent(
                id: submission.id, userID: submission.userId, deviceID: submission.deviceId,
                type: submission.event.type.rawValue, data: submission.event.dataJSON, occurredAt: submission.occurredAt,
                expectedVersion: submission.expectedVersion))
        }
        let committed: CommittedAppend
        do {
            if newEvents.count <= Self.groupCommitLimit {
                committed = try await committer.append(appID: appID, events: newEvents, decoded: decoded)
            } else {
                let projector = DeviceProjector(events: decoded)
                let results = try await log.append(appID: appID, events: newEvents, projector: projector)
                committed = CommittedAppend(results: results, outcomes: projector.outcomes, states: projector.states)
            }
        } catch {
            rejections.increment()
            if let error = error as? EventLogError { throw Self.translate(error) }
            throw Self.translate(database: error)
        }
        for (key, version, state) in committed.states {
            cache.store(key, version: version, state: state)
        }
        eventsAppended.increment(by: committed.results.filter { !$0.duplicate }.count)
        do {
            return try committed.results.enumerated().map { index, result in
                // A new event's outcome is the one just computed; a duplicate's is read back.
                let outcome = try committed.outcomes[index] ?? JSONText.outcome(result.outcome ?? "{}")
                return EventResult(
                    id: result.id.lowercasedText, userId: result.userID, deviceId: result.deviceID,
                    version: result.version, effects: outcome.effects, status: outcome.after.status,
                    duplicate: result.duplicate)
            }
        } catch {
            throw ServiceError(.internalError, "a stored outcome could not be read")
        }
    }

    static func translate(_ error: EventLogError) -> ServiceError {
        switch error {
        case .versionConflict(let index, let stream, let expected, let actual):
            return ServiceError(
                .versionConflict,
                "stream \(stream.userID)/\(stream.deviceID) is at version \(actual), not the expected \(expected)",
                index: index)
        case .rejected(let index, let reason):
            if let rejection = reason as? AuthorizationRejection {
                return ServiceError(.ruleViolation, rejection.message, index: index)
            }
            return ServiceError(.ruleViolation, "\(reason)", index: index)
        case .database(let underlying):
            return translate(database: underlying)
        }
    }

    /// A database error as the client sees it: unreachable, restarting, failing over or out of
    /// connections is 503 `databaseUnavailable`; no free connection in time is 503
    /// `overloaded`; a value the database refused is the request's own 422; anything else is
    /// a defect (500), logged by the HTTP layer.
    static func translate(database error: any Error) -> ServiceError {
        if let service = error as? ServiceError { return service }
        if case .database(let underlying)? = error as? EventLogError { return translate(database: underlying) }
        if let postgres = error as? PostgresError {
            if postgres.code == .poolExhausted {
                return ServiceError(.overloaded, "the server is busy: no database connection became free in time")
            }
            if postgres.isUnavailable { return ServiceError(.databaseUnavailable, "the database is unavailable") }
            if postgres.isDataFault {
                return ServiceError(.validationFailed, "the database refused a value of the request")
            }
        }
        return ServiceError(.internalError, "the request could not be completed")
    }

    /// Runs a database operation, translating its errors.
    func database<T>(_ body: () async throws -> T) async throws(ServiceError) -> T {
        do {
            return try await body()
        } catch {
            throw Self.translate(database: error)
        }
    }

    // MARK: - Gates

    /// A device's state from memory, loaded once from the projection on a miss.
    public func device(_ key: StreamKey) async throws(ServiceError) -> DeviceStateCache.Entry {
        if let entry = cache.entry(key) { return entry }
        let ticket = cache.ticket(key)
        let loaded = try await database {
            try await pool.withConnection { connection in
                try DeviceStateStore.load(appID: key.appID, keys: [key], on: connection)
            }
        }
        guard let row = loaded[key] else { return DeviceStateCache.Entry(version: 0, state: DeviceState()) }
        cache.fill(key, ticket: ticket, version: row.version, state: row.state)
        return DeviceStateCache.Entry(version: row.version, state: row.state)
    }

    func catalog(_ appID: UUID) async throws(ServiceError) -> [Feature] {
        try await database { try await features.features(appID: appID) }
    }

    public func deviceGates(_ key: StreamKey) async throws(ServiceError) -> DeviceGates {
        let entry = try await device(key)
        let features = try await catalog(key.appID)
        let state = entry.state
        return DeviceGates(
            userId: key.userID, deviceId: key.deviceID, status: state.status, provisional: state.provisional,
            temporary: state.temporary, accuracy: state.effectiveAccuracy, version: entry.version,
            decisions: features.map { state.decide($0, version: entry.version) })
    }

    public func deviceGate(_ key: StreamKey, feature featureKey: String) async throws(ServiceError) -> GateDecision {
        guard let feature = try await catalog(key.appID).first(where: { $0.key == featureKey }) else {
            throw ServiceError(.notFound, "no feature \(featureKey.prefix(128))")
        }
        let entry = try await device(key)
        return entry.state.decide(feature, version: entry.version)
    }

    /// Every device of a user; a user with no devices is one device with no events.
    public func userDevices(appID: UUID, userID: String) async throws(ServiceError) -> [(String, DeviceStateCache.Entry)] {
        let stored = try await database {
            try await pool.withConnection { connection in
                try DeviceStateStore.loadUser(appID: appID, userID: userID, on: connection)
            }
        }
        return stored.map { deviceID, entry in
            let key = StreamKey(appID: appID, userID: userID, deviceID: deviceID)
            if let cached = cache.entry(key), cached.version > entry.version { return (deviceID, cached) }
            return (deviceID, entry)
        }
    }

    public func userGates(appID: UUID, userID: String) async throws(ServiceError) -> UserGates {
        let devices = try await userDevices(appID: appID, userID: userID)
        let features = try await catalog(appID)
        let verdicts = features.map { feature in
            let perDevice = devices.map { deviceID, entry in
                let decision = entry.state.decide(feature, version: entry.version)
                return UserGates.DeviceVerdict(deviceId: deviceID, enabled: decision.enabled, reason: decision.reason, action: decision.action)
            }
            let enabled = devices.isEmpty
                ? DeviceState().decide(feature, version: 0).enabled
                : perDevice.contains { $0.enabled }
            return UserGates.FeatureVerdict(feature: feature.key, enabled: enabled, devices: perDevice)
        }
        return UserGates(userId: userID, decisions: verdicts)
    }

    /// `POST /v1/gates/query`: many devices at once; misses load in one query.
    public func query(appID: UUID, devices: [(userID: String, deviceID: String)], featureKeys: [String]?) async throws(ServiceError) -> [DeviceDecisions] {
        guard devices.count <= Self.maxQueryDevices else {
            throw ServiceError(.tooLarge, "a query holds at most \(Self.maxQueryDevices) devices")
        }
        let catalog = try await catalog(appID)
        var selected = catalog
        if let featureKeys {
            selected = []
            for key in featureKeys {
                guard let feature = catalog.first(where: { $0.key == key }) else {
                    throw ServiceError(.validationFailed, "features: no feature \(key.prefix(128))")
                }
                selected.append(feature)
            }
        }
        let keys = devices.map { StreamKey(appID: appID, userID: $0.userID, deviceID: $0.deviceID) }
        var entries: [StreamKey: DeviceStateCache.Entry] = [:]
        var missing: [StreamKey] = []
        for key in keys {
            if let entry = cache.entry(key) { entries[key] = entry } else { missing.append(key) }
        }
        if !missing.isEmpty {
            let missing = missing
            let tickets = missing.map { cache.ticket($0) }
            let loaded = try await database {
                try await pool.withConnection { connection in
                    try DeviceStateStore.load(appID: appID, keys: missing, on: connection)
                }
            }
            for (key, ticket) in zip(missing, tickets) {
                guard let row = loaded[key] else { continue }
                entries[key] = DeviceStateCache.Entry(version: row.version, state: row.state)
                cache.fill(key, ticket: ticket, version: row.version, state: row.state)
            }
        }
        return keys.map { key in
            let entry = entries[key] ?? DeviceStateCache.Entry(version: 0, state: DeviceState())
            return DeviceDecisions(
                userId: key.userID, deviceId: key.deviceID,
                decisions: selected.map { entry.state.decide($0, version: entry.version) })
        }
    }

    // MARK: - Audit

    /// A stream's events from the standby when there is one (history may lag), else, or when
    /// it cannot answer, from the primary.
    func readStream(_ key: StreamKey, afterVersion: Int64, limit: Int) async throws -> [RecordedEvent] {
        try await reads.read { onStandby in
            try await (onStandby ? readLog : log).readStream(key, afterVersion: afterVersion, limit: limit)
        }
    }

    /// A stream's events in version order, all of them.
    func allEvents(_ key: StreamKey) async throws(ServiceError) -> [RecordedEvent] {
        var events: [RecordedEvent] = []
        while true {
            let after = events.last?.version ?? 0
            let page = try await database { try await readStream(key, afterVersion: after, limit: 1000) }
            events += page
            if page.count < 1000 { return events }
        }
    }

    /// The state after `version` events, or after the longest prefix whose events all occurred
    /// at or before `asOf` (SPEC §5). When the stream's first events were archived, the
    /// computation starts from its state at the archive boundary, and a version or time before
    /// it is not found (it lies in the archive file).
    public func state(_ key: StreamKey, asOf: Date?, version: Int64?) async throws(ServiceError) -> StateView {
        var (archived, events) = try await archivedPrefixAndEvents(key)
        let first = archived?.version ?? 0
        if let version, version > first + Int64(events.count) {
            throw ServiceError(.notFound, "the stream has \(first + Int64(events.count)) events, not \(version)")
        }
        if let archived {
            if let version, version < archived.version {
                throw ServiceError(.notFound, "versions 1-\(archived.version) of the stream are archived: the earliest state kept is at version \(archived.version)")
            }
            if let asOf, asOf < archived.lastOccurredAt {
                throw ServiceError(.notFound, "the stream's events before \(RFC3339.string(from: archived.lastOccurredAt)) are archived")
            }
        }
        var state = archived?.state ?? DeviceState()
        var reached = first
        if version == first { events = [] }
        for recorded in events {
            if let version, recorded.version > version { break }
            if let asOf, recorded.occurredAt > asOf { break }
            guard let event = Self.decode(recorded) else {
                throw ServiceError(.internalError, "event \(recorded.version) of the stream could not be read")
            }
            _ = try? state.apply(event)
            reached = recorded.version
        }
        let features = try await catalog(key.appID)
        return StateView(version: reached, state: state, decisions: features.map { state.decide($0, version: reached) })
    }

    /// The stream's state at the archive boundary (nil when none of its events was archived)
    /// and its events after it. Read again when an archive committed between the two reads
    /// (the events then do not start right after the snapshot's version).
    func archivedPrefixAndEvents(
        _ key: StreamKey
    ) async throws(ServiceError) -> ((version: Int64, state: DeviceState, lastOccurredAt: Date)?, [RecordedEvent]) {
        var attempt = 0
        while true {
            attempt += 1
            let archived = try await database {
                try await reads.read { [log, readLog] onStandby in
                    try await (onStandby ? readLog : log).pool.withConnection { try ArchiveSnapshot.stream(key, on: $0) }
                }
            }
            let events = try await allEvents(key)
            let next = (archived?.version ?? 0) + 1
            if events.first.map({ $0.version == next }) ?? true || attempt == 3 { return (archived, events) }
        }
    }

    /// History, paged by version (SPEC §5): `limit` 100 by default, 1,000 at most.
    public func history(_ key: StreamKey, afterVersion: Int64, limit: Int) async throws(ServiceError) -> HistoryPage {
        let events = try await database { try await readStream(key, afterVersion: afterVersion, limit: limit + 1) }
        let page = events.prefix(limit)
        let entries = try page.map { recorded throws(ServiceError) -> HistoryPage.Entry in
            do {
                let outcome = try JSONText.outcome(recorded.outcome ?? "{}")
                return HistoryPage.Entry(
                    version: recorded.version, id: recorded.id.lowercasedText, type: recorded.type,
                    data: try JSONText.decode(JSONValue.self, recorded.data),
                    occurredAt: RFC3339.string(from: recorded.occurredAt), recordedAt: RFC3339.string(from: recorded.recordedAt),
                    effects: outcome.effects, before: outcome.before, after: outcome.after)
            } catch {
                throw ServiceError(.internalError, "event \(recorded.version) of the stream could not be read")
            }
        }
        return HistoryPage(entries: entries, nextAfterVersion: events.count > limit ? page.last?.version : nil)
    }

    /// The domain event of a stored one.
    static func decode(_ recorded: RecordedEvent) -> LocationEvent? {
        try? JSONText.event(type: recorded.type, data: recorded.data)
    }
}
