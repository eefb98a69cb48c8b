import EventLog
import Foundation
import LocationAuthorization
import PostgresClient
import Synchronization

/// Each app's experiments (SPEC §16), from the `experiments` table, cached in memory so that
/// an evaluation reads definitions without a round trip; and their changes: create or replace,
/// stop, delete, each in one transaction with its audit entry (SPEC §14).
///
/// The cache follows the feature catalog's rules (`FeatureCatalog`): it answers only while
/// notifications are followed (`CacheCoherence`), a load never stores over an invalidation that
/// came while it ran (an epoch), and it holds at most `maxApps` apps (emptied when full).
/// Changes notify the feature catalog's channel, `locgate_features`, with the app id: an app's
/// experiments are part of its catalog there, and every server drops both (`FeatureCatalog`
/// forwards its invalidations here), within SPEC §5's second, and wakes the app's push
/// streams (an OFREP bulk evaluation includes the experiments).
///
/// Every change takes the app's catalog lock (`FeatureCatalog.lockCatalog`), which a feature's
/// PUT takes too: so a key is never both a feature's and an experiment's (`keyInUse`), and the
/// 50 experiments an app may have are counted under it. What a change may do is decided by the
/// domain (`Experiment.replace`, `Experiment.stop`) on the row read under that lock.
public final class ExperimentCatalog: Sendable {
    public static let maxApps = 10_000

    private struct Cache {
        var apps: [UUID: [Experiment]] = [:]
        var epoch: UInt64 = 0
    }

    private let pool: PostgresConnectionPool
    private let coherence: CacheCoherence
    private let cache = Mutex(Cache())
    /// Known exposures, dropped with an app's experiments (a deleted key may come back).
    let exposures: ExposureMemory

    public init(pool: PostgresConnectionPool, coherence: CacheCoherence, exposures: ExposureMemory = ExposureMemory()) {
        self.pool = pool
        self.coherence = coherence
        self.exposures = exposures
    }

    // MARK: - Reading

    /// The app's experiments, sorted by key: from memory while notifications are followed.
    func experiments(appID: UUID) async throws -> [Experiment] {
        let following = coherence.isFollowing
        let (cached, epoch) = cache.withLock { ($0.apps[appID], $0.epoch) }
        if following, let cached { return cached }
        let experiments = try await pool.withConnection { connection in
            try Self.read(appID: appID, on: connection)
        }
        if following {
            cache.withLock { cache in
                guard cache.epoch == epoch else { return }
                if cache.apps.count >= Self.maxApps { cache.apps = [:] }
                cache.apps[appID] = experiments
            }
        }
        return experiments
    }

    /// The app's experiments as stored, sorted by key (byte order: keys are ASCII).
    static func read(appID: UUID, on connection: PostgresConnection) throws -> [Experiment] {
        try connection.query("\(unescaped: columns) FROM experiments WHERE app_id = \(appID)")
            .map { try experiment(from: $0) }
            .sorted { $0.key < $1.key }
    }

    /// One experiment as stored, its row locked for the transaction; nil when there is none.
    static func readForUpdate(appID: UUID, key: String, on connection: PostgresConnection) throws -> Experiment? {
        try connection.query("\(unescaped: columns) FROM experiments WHERE app_id = \(appID) AND key = \(key) FOR NO KEY UPDATE")
            .first.map { try experiment(from: $0) }
    }

    /// What `experiment(from:)` reads.
    static let columns = "SELECT key, definition::text, state, created_at, stopped_at, stop_reason, winner"

    /// A stored row read back through the checks a PUT passes (`ExperimentDefinition(key:body:)`):
    /// a row that fails them is a defect, not the client's fault.
    static func experiment(from row: PostgresRow) throws -> Experiment {
        let key: String = try row.decode(0)
        let text: String = try row.decode(1)
        let definition: ExperimentDefinition
        do {
            definition = try ExperimentDefinition(key: key, body: Data(text.utf8))
        } catch {
            throw ServiceError(.internalError, "a stored experiment could not be read back", cause: error.message)
        }
        guard let state = ExperimentState(rawValue: try row.decode(2)) else {
            throw ServiceError(.internalError, "a stored experiment has an unknown state")
        }
        let stopReason = try row.decodeIfPresent(5, as: String.self).flatMap(ExperimentStopReason.init(rawValue:))
        return Experiment(
            definition: definition, state: state, createdAt: try row.decode(3, as: Date.self),
            stoppedAt: try row.decodeIfPresent(4, as: Date.self), stopReason: stopReason,
            winner: try row.decodeIfPresent(6, as: String.self))
    }

    // MARK: - Changes

    /// Creates or replaces an experiment; `created` is true when it is new. Under the app's
    /// catalog lock: a feature's key is a 409 `keyInUse`; a 51st experiment a 422 naming `key`;
    /// a replacement is the domain's (`Experiment.replace`: 409 `experimentRunning` naming the
    /// fixed field, 409 `experimentStopped`). Recorded as `experimentPut` with `created`.
    func put(appID: UUID, definition: ExperimentDefinition, actor: AuditActor) async throws -> (experiment: Experiment, created: Bool) {
        let stored = try Self.storedForm(definition)
        let result = try await pool.transaction { connection -> (experiment: Experiment, created: Bool) in
            try FeatureCatalog.lockCatalog(appID: appID, on: connection)
            guard try connection.query(
                "SELECT 1 FROM features WHERE app_id = \(appID) AND key = \(definition.key)"
            ).isEmpty else {
                throw ServiceError(.keyInUse, "key: \(definition.key) is a feature's key; an experiment needs a key of its own")
            }
            let experiment: Experiment
            let created: Bool
            if var existing = try Self.readForUpdate(appID: appID, key: definition.key, on: connection) {
                do throws(ExperimentChangeError) {
                    try existing.replace(with: definition)
                } catch {
                    throw ServiceError(error)
                }
                try connection.query(
                    """
                    UPDATE experiments SET definition = \(PostgresJSON(stored)), updated_at = now()
                    WHERE app_id = \(appID) AND key = \(definition.key)
                    """)
                experiment = existing
                created = false
            } else {
                let count = try connection.query("SELECT count(*) FROM experiments WHERE app_id = \(appID)").first?.decode(0, as: Int64.self) ?? 0
                guard count < Int64(ExperimentDefinition.maxPerApp) else {
                    throw ServiceError(
                        .validationFailed,
                        "key: the app has \(ExperimentDefinition.maxPerApp) experiments, the most it may have; delete one first")
                }
                let row = try connection.query(
                    """
                    INSERT INTO experiments (app_id, key, definition) VALUES (\(appID), \(definition.key), \(PostgresJSON(stored)))
                    RETURNING created_at
                    """
                ).first
                let createdAt = try row?.decode(0, as: Date.self) ?? Date()
                experiment = Experiment(definition: definition, createdAt: createdAt)
                created = true
            }
            try Self.notify(appID: appID, on: connection)
            try AdminAuditLog.record(
                AuditChange(appID: appID, actor: actor, action: .experimentPut, target: definition.key, details: ["created": .bool(created)]),
                on: connection)
            return (experiment, created)
        }
        invalidate(appID)
        return result
    }

    /// Stops a running experiment with `winner` (nil: the control), for `reason`; nil when the
    /// app has no such experiment. A stopped one is a 409 `experimentStopped`, a winner that is
    /// no variant a 422 naming `winner` (`Experiment.stop`). Recorded as `experimentStopped`
    /// with `details` (an operator's: the winner; the guard's: its finding).
    func stop(
        appID: UUID, key: String, winner: String?, reason: ExperimentStopReason, actor: AuditActor, details: [String: AuditDetail]? = nil
    ) async throws -> Experiment? {
        let stopped = try await pool.transaction { connection -> Experiment? in
            try FeatureCatalog.lockCatalog(appID: appID, on: connection)
            guard let experiment = try Self.readForUpdate(appID: appID, key: key, on: connection) else { return nil }
            return try Self.stop(experiment, appID: appID, winner: winner, reason: reason, actor: actor, details: details, on: connection)
        }
        if stopped != nil { invalidate(appID) }
        return stopped
    }

    /// The stop in the caller's transaction, `experiment` read with its row locked: the domain
    /// decides, the row records the time, the reason, the winner and the log's position (answers
    /// at later positions do not count, whichever server appends them), every server is told,
    /// and the audit entry is written last (`AdminAuditLog.record`).
    static func stop(
        _ experiment: Experiment, appID: UUID, winner: String?, reason: ExperimentStopReason, actor: AuditActor,
        details: [String: AuditDetail]?, on connection: PostgresConnection
    ) throws -> Experiment {
        var experiment = experiment
        let now = try connection.query("SELECT now()").first?.decode(0, as: Date.self) ?? Date()
        do throws(ExperimentChangeError) {
            try experiment.stop(winner: winner, reason: reason, at: now)
        } catch {
            throw ServiceError(error)
        }
        let chosen = experiment.winner ?? experiment.definition.control
        try connection.query(
            """
            UPDATE experiments SET state = 'stopped', stopped_at = now(), stop_reason = \(reason.rawValue), winner = \(chosen),
                stopped_position = \(unescaped: ExperimentExposures.logPosition), updated_at = now()
            WHERE app_id = \(appID) AND key = \(experiment.key)
            """)
        try notify(appID: appID, on: connection)
        try AdminAuditLog.record(
            AuditChange(
                appID: appID, actor: actor, action: .experimentStopped, target: experiment.key,
                details: details ?? ["winner": .string(chosen)]),
            on: connection)
        return experiment
    }

    /// Deletes an experiment with its exposures and counts (the foreign keys cascade); false
    /// when there was none. Recorded as `experimentDeleted`.
    func delete(appID: UUID, key: String, actor: AuditActor) async throws -> Bool {
        let deleted = try await pool.transaction { connection -> Bool in
            try FeatureCatalog.lockCatalog(appID: appID, on: connection)
            let removed = try connection.query("DELETE FROM experiments WHERE app_id = \(appID) AND key = \(key) RETURNING key")
            guard !removed.isEmpty else { return false }
            try Self.notify(appID: appID, on: connection)
            try AdminAuditLog.record(
                AuditChange(appID: appID, actor: actor, action: .experimentDeleted, target: key), on: connection)
            return true
        }
        if deleted { invalidate(appID) }
        return deleted
    }

    /// The definition as `experiments.definition` stores it (and a GET shows it).
    static func storedForm(_ definition: ExperimentDefinition) throws -> String {
        try JSONText.encode(definition)
    }

    /// Tells every server, at commit, that the app's catalog changed.
    private static func notify(appID: UUID, on connection: PostgresConnection) throws {
        try connection.query("SELECT pg_notify(\(FeatureCatalog.notificationChannel), \(appID.uuidString))")
    }

    // MARK: - Invalidation

    /// Drops the app's cached experiments and its known exposures (on a notification from any
    /// process, through `FeatureCatalog.invalidate`).
    public func invalidate(_ appID: UUID) {
        cache.withLock { cache in
            cache.epoch &+= 1
            cache.apps.removeValue(forKey: appID)
        }
        exposures.forget(appID: appID)
    }

    /// Drops everything (a resync).
    public func invalidateAll() {
        cache.withLock { cache in
            cache.epoch &+= 1
            cache.apps = [:]
        }
        exposures.removeAll()
    }
}

extension ServiceError {
    /// A change the domain refused (`Experiment.replace`, `Experiment.stop`), with its code.
    init(_ error: ExperimentChangeError) {
        switch error {
        case .running(let field): self.init(.experimentRunning, field.message)
        case .stopped: self.init(.experimentStopped, error.description)
        case .invalid(let invalid): self.init(.validationFailed, invalid.message)
        }
    }

    /// A definition the domain refused (`ExperimentDefinition(key:body:)`): not JSON is 400
    /// `malformedJSON`, a missing or mistyped field 400 `invalidRequest`, a value out of range
    /// or outside the vocabulary 422 `validationFailed` naming the field, as a feature's body.
    init(definition error: EventValidationError) {
        switch error.kind {
        case .malformedJSON: self.init(.malformedJSON, error.message)
        case .missingField, .wrongType: self.init(.invalidRequest, error.message)
        case .invalidValue, .unknownType: self.init(.validationFailed, error.message)
        }
    }
}
