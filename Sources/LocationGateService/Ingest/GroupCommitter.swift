import Dispatch
import EventLog
import Foundation
import LocationAuthorization
import Logging
import Metrics
import PostgresClient
import Synchronization

/// What an append stored, for the answer to its request and for the cache.
struct CommittedAppend: Sendable {
    var results: [AppendResult]
    /// The outcome of each of the request's events, at its index; nil for a duplicate.
    var outcomes: [EventOutcome?]
    /// The committed states of the request's streams (a stream two requests of a group share
    /// goes with the first), for the cache.
    var states: [(StreamKey, Int64, DeviceState)]
}

/// Group commit for small appends: concurrent requests share one transaction and its fsync,
/// and each is still acknowledged only after that transaction commits.
///
/// This type is the I/O around two state machines that hold every decision: `GroupCommitQueue`
/// (admission, the bounds, when a drainer or the watcher starts, which requests form the next
/// group, which waited too long) and `GroupAttempts` (within one group, which requests go into
/// the next transaction after a refusal, a race or a failure). It holds the queue's state under
/// a lock, runs the tasks the queue asks for, appends on the pool, and answers each request.
///
/// Requests wait in a queue; a drainer takes what is queued (up to `maxEvents` events), appends
/// each app's requests as one combined batch, commits once, and answers them all. One drainer runs
/// while groups commit promptly: one group at a time makes the largest groups, and concurrent
/// groups only contend for the same index pages (measured: 4 in flight cost PostgreSQL 75% more CPU
/// per event than 1). Another starts, up to `maxInFlight`, when the oldest queued request has
/// waited `spillAfter` (a watcher task checks while requests wait): a group stuck on a lock or a
/// slow disk then does not hold up every request behind it. When an event is refused (a version
/// conflict, a rule), the transaction is rolled back, that request alone fails, and the others are
/// appended again. When the database refuses the group for any other reason that is not an outage,
/// each request is appended alone, so that one request's bad data never fails another's (least of
/// all another app's).
///
/// The queue is bounded: beyond `maxQueuedEvents` a request is refused at once, and a request
/// that waited longer than `queueTimeout` is answered `overloaded` without being appended. No
/// app may hold more than `maxQueuedEventsPerApp` of it (a quarter by default), so one tenant's
/// burst leaves room for the others.
///
/// Refusals cost at most O(n log n) request-appends in a group of n: after the second refused
/// request, the rest of the group is split in halves, each appended as a group of its own
/// (recursively), instead of the whole rest being appended again for every refusal.
final class GroupCommitter: Sendable {
    struct Request {
        var appID: UUID
        var events: [NewEvent]
        /// The decoded `events`, in their order.
        var decoded: [LocationEvent]
        var continuation: CheckedContinuation<CommittedAppend, any Error>
    }

    private let pool: PostgresConnectionPool
    /// What marks this process's NOTIFYs (`GateService.appendOrigin`).
    private let origin: String?
    private let spillAfter: Duration
    let maxQueuedEvents: Int
    let maxQueuedEventsPerApp: Int
    let queueTimeout: Duration
    /// The clock of the watcher and the queue timeout (`ContinuousClock`; tests inject a
    /// manual one), read as time since the committer started, as the queue keeps it.
    private let clock: ElapsedTime
    private let state: Mutex<GroupCommitQueue<Request>>
    private let isolations = Counter(label: "locgate_group_commit_isolations_total")
    private let groupsCommitted = Counter(label: "locgate_group_commits_total")
    private let eventsCommitted = Counter(label: "locgate_group_commit_events_total")
    /// The groups' time, from a group's first statement to its commit's answer, and of it the
    /// time spent waiting for the database's answers: the rest is this process's own work on
    /// the drainer's thread, which the database waits for (one group at a time).
    private let groupMicroseconds = Counter(label: "locgate_group_commit_microseconds_total")
    private let databaseMicroseconds = Counter(label: "locgate_group_commit_database_microseconds_total")
    /// Drainers the watcher started because the running groups were stuck (`spillAfter`).
    private let spillsCounted = Counter(label: "locgate_group_commit_spills_total")
    private let spilled = Atomic<Int>(0)
    /// Drainers started so far because the running groups took longer than `spillAfter`.
    var spills: Int { spilled.load(ordering: .relaxed) }
    /// Requests appended in a transaction so far, every attempt counted (tests bound the cost
    /// of refusals with it).
    private let attempted = Atomic<Int>(0)
    var requestsAttempted: Int { attempted.load(ordering: .relaxed) }

    init(
        pool: PostgresConnectionPool, maxInFlight: Int = 2, spillAfter: Duration = .milliseconds(20),
        maxEvents: Int = 2000, maxQueuedEvents: Int = 20_000, maxQueuedEventsPerApp: Int? = nil,
        queueTimeout: Duration = .seconds(5), clock: any Clock<Duration> = ContinuousClock(), origin: String? = nil
    ) {
        let maxQueuedEventsPerApp = maxQueuedEventsPerApp ?? max(1_000, maxQueuedEvents / 4)
        self.maxQueuedEventsPerApp = maxQueuedEventsPerApp
        self.pool = pool
        self.origin = origin
        self.clock = ElapsedTime(clock)
        self.spillAfter = spillAfter
        self.maxQueuedEvents = maxQueuedEvents
        self.queueTimeout = queueTimeout
        self.state = Mutex(GroupCommitQueue(
            maxInFlight: maxInFlight, spillAfter: spillAfter, maxEvents: maxEvents, maxQueuedEvents: maxQueuedEvents,
            maxQueuedEventsPerApp: maxQueuedEventsPerApp, queueTimeout: queueTimeout))
    }

    /// Events waiting for a group now (a gauge for `/metrics`).
    var queuedEvents: Int { state.withLock { $0.queuedEvents } }

    /// Appends one request's events; returns when they are durable.
    func append(appID: UUID, events: [NewEvent], decoded: [LocationEvent]) async throws -> CommittedAppend {
        try await withCheckedThrowingContinuation { continuation in
            let request = Request(appID: appID, events: events, decoded: decoded, continuation: continuation)
            let now = clock.now
            let action = state.withLock { queue in
                queue.enqueue(request, appID: appID, events: events.count, at: now)
            }
            switch action {
            case .refuse(.queueFull):
                continuation.resume(throwing: ServiceError(.overloaded, "the server is busy: too many events are waiting to be appended"))
            case .refuse(.appShareFull):
                continuation.resume(throwing: ServiceError(
                    .overloaded, "the server is busy: this app has \(maxQueuedEventsPerApp) events waiting to be appended already"))
            case .queued:
                break
            case .startWatcher:
                Task { await self.watchForStuckGroups() }
            case .startDrainer:
                Task { await self.drain() }
            }
        }
    }

    /// While requests wait, wakes every `spillAfter` and tells the queue, which starts another
    /// drainer when the oldest request has waited that long (the running groups are stuck on a
    /// lock or a slow disk). One watcher at a time; it ends when the queue says so.
    private func watchForStuckGroups() async {
        while true {
            try? await clock.sleep(for: spillAfter)
            let now = clock.now
            switch state.withLock({ $0.watcherWoke(at: now) }) {
            case .stop: return
            case .wait: continue
            case .startDrainer:
                spilled.add(1, ordering: .relaxed)
                spillsCounted.increment()
                Task { await self.drain() }
            }
        }
    }

    /// Commits the groups the queue hands out until it says to stop. Groups follow one another
    /// on one pool thread and its connection (`commitGroups`): a group's requests are answered
    /// from there and the next group starts at once, with no hop to a task and back to a pool
    /// thread between them (on two busy cores each hop waited for a core: a tenth of a group's
    /// time). The drainer comes back here when the queue says to stop, when the connection
    /// broke (the pool replaces it for the next group), or when another caller waits for one.
    private func drain() async {
        let started = clock.now
        var action = state.withLock { $0.drainerStarted(at: started) }
        while true {
            switch action {
            case .commit(let group, let expired):
                refuse(expired)
                do {
                    action = try await pool.withConnection { connection in self.commitGroups(first: group, on: connection) }
                } catch {
                    // No connection for the group (the database is down, the pool's wait timed
                    // out, it is closing): its requests fail as an outage fails a transaction.
                    for request in group { request.continuation.resume(throwing: error) }
                    let now = clock.now
                    action = state.withLock { $0.groupFinished(at: now) }
                }
            case .stop(let expired, let startWatcher):
                refuse(expired)
                if startWatcher { Task { await self.watchForStuckGroups() } }
                return
            }
        }
    }

    /// Appends `first` and the groups after it on `connection`, answering each group's requests
    /// as it ends, until the queue says to stop, the connection breaks or another caller waits
    /// for a connection; returns the queue's next action then (a group still to commit, in the
    /// last two cases).
    private func commitGroups(first: [Request], on connection: PostgresConnection) -> GroupCommitQueue<Request>.DrainAction {
        var group = first
        while true {
            let started = DispatchTime.now().uptimeNanoseconds
            let waited = connection.waitingNanoseconds
            let outcomes = append(group, on: connection)
            groupMicroseconds.increment(by: Int((DispatchTime.now().uptimeNanoseconds &- started) / 1000))
            databaseMicroseconds.increment(by: Int((connection.waitingNanoseconds &- waited) / 1000))
            for (request, outcome) in zip(group, outcomes) {
                request.continuation.resume(with: outcome)
            }
            let now = clock.now
            let next = state.withLock { $0.groupFinished(at: now) }
            // Back to the pool when the connection broke (it is replaced) or another caller
            // waits for one (a small pool is shared, not held for the whole burst).
            guard case .commit(let nextGroup, let expired) = next, !connection.isBroken, pool.waiting == 0 else { return next }
            refuse(expired)
            group = nextGroup
        }
    }

    /// Answers requests that waited longer than `queueTimeout` for their turn.
    private func refuse(_ expired: [Request]) {
        for request in expired {
            request.continuation.resume(throwing: ServiceError(
                .overloaded, "the server is busy: the append waited more than \(queueTimeout) for its turn"))
        }
    }

    /// A request of the group refused one of its events; the transaction rolled back.
    private struct Refused: Error {
        var request: Int
        var error: EventLogError
    }

    /// Appends the group on `connection`, in as many transactions as `GroupAttempts` asks for
    /// (one, unless a request is refused or the database refuses the group), and returns each
    /// request's outcome.
    private func append(_ group: [Request], on connection: PostgresConnection) -> [Result<CommittedAppend, any Error>] {
        var attempts = GroupAttempts<CommittedAppend>(requests: group.count)
        var action = attempts.start()
        while true {
            switch action {
            case .append(let indices):
                let requests = indices.map { (group[$0].appID, group[$0].events, group[$0].decoded) }
                attempted.add(indices.count, ordering: .relaxed)
                do {
                    let committed = try connection.transaction { connection in
                        try Self.appendAll(requests, origin: origin, on: connection)
                    }
                    groupsCommitted.increment()
                    eventsCommitted.increment(by: indices.reduce(0) { $0 + group[$1].events.count })
                    action = attempts.appended(committed)
                } catch let refused as Refused {
                    action = attempts.failed(refused.error, .refused(position: refused.request))
                } catch {
                    action = attempts.failed(error, Self.failure(error))
                }
            case .createPartitions:
                // The log outran its partitions (the servers create them ahead, once a minute):
                // create them now and append again; nothing was stored.
                do {
                    _ = try EventLog.ensurePartitions(on: connection)
                    action = attempts.partitionsCreated()
                } catch {
                    action = attempts.partitionsFailed(error)
                }
            case .finish(let outcomes):
                if attempts.isolations > 0 { isolations.increment(by: attempts.isolations) }
                return outcomes
            }
        }
    }

    /// What a failed transaction means for its requests.
    private static func failure(_ error: any Error) -> GroupAttempts<CommittedAppend>.Failure {
        if isUniqueRace(error) { return .uniqueRace }
        if isMissingPartition(error) { return .missingPartition }
        if isOutage(error) { return .outage }
        return .other
    }

    /// Another writer stored a row the group's reads found absent (`PostgresError.isAppendRace`):
    /// a retry of an event id, or a device state a replay's rebuild wrote. Appending again reads it.
    private static func isUniqueRace(_ error: any Error) -> Bool {
        (error as? PostgresError)?.isAppendRace == true
    }

    /// The log outran its partitions.
    private static func isMissingPartition(_ error: any Error) -> Bool {
        databaseError(error)?.isMissingPartition == true
    }

    /// The database itself failed (unreachable, restarting, out of connections): every request
    /// the transaction touched fails with it, and appending them one by one would not help.
    private static func isOutage(_ error: any Error) -> Bool {
        databaseError(error)?.isUnavailable == true
    }

    /// The database's error, as thrown or wrapped by the event log.
    private static func databaseError(_ error: any Error) -> PostgresError? {
        if let postgres = error as? PostgresError { return postgres }
        if case .database(let underlying)? = error as? EventLogError { return databaseError(underlying) }
        return nil
    }

    /// Appends the requests of each app as one combined batch: one set of statements for all
    /// of them. Throws `Refused` for the first request with a refused event.
    private static func appendAll(
        _ requests: [(UUID, [NewEvent], [LocationEvent])], origin: String?, on connection: PostgresConnection
    ) throws -> [CommittedAppend] {
        var committed = [CommittedAppend?](repeating: nil, count: requests.count)
        // Every stream of the group is locked before the first append writes: a later app's
        // append (or a later round) waiting for a lock after the transaction got its id would
        // put that stream's events out of version order in the global order.
        try EventLog.lock(requests.flatMap { request in
            request.1.map { StreamKey(appID: request.0, userID: $0.userID, deviceID: $0.deviceID) }
        }, on: connection)
        var appended = [Bool](repeating: false, count: requests.count)
        for appID in Set(requests.map(\.0)) {
            var pending = requests.indices.filter { requests[$0].0 == appID }
            while !pending.isEmpty {
                // One round: requests whose ids do not repeat an earlier request's in the round
                // (a later round finds them stored, and answers them as duplicates).
                var round: [Int] = []
                var ids: Set<UUID> = []
                for index in pending where requests[index].1.allSatisfy({ !ids.contains($0.id) }) {
                    round.append(index)
                    appended[index] = true
                    for event in requests[index].1 { ids.insert(event.id) }
                }
                var events: [NewEvent] = []
                var decoded: [LocationEvent] = []
                var offsets: [Int] = []
                offsets.reserveCapacity(round.count)
                for index in round {
                    offsets.append(events.count)
                    events.append(contentsOf: requests[index].1)
                    decoded.append(contentsOf: requests[index].2)
                }
                let projector = DeviceProjector(events: decoded)
                let results: [AppendResult]
                do {
                    results = try EventLog.appendInTransaction(
                        appID: appID, events: events, projector: projector, streamsLocked: true, origin: origin, on: connection)
                } catch let error as EventLogError {
                    // Find the request of the refused event; it fails with its own index.
                    let failedAt: Int
                    switch error {
                    case .versionConflict(let at, _, _, _), .idConflict(let at, _, _), .rejected(let at, _): failedAt = at
                    case .database: throw error
                    }
                    let number = offsets.lastIndex { $0 <= failedAt } ?? 0
                    throw Refused(request: round[number], error: error.reindexed(failedAt - offsets[number]))
                }
                let eventOutcomes = projector.outcomes
                // Each request carries the states of its own streams only: the cache stores
                // what each answer carries, and the whole round's states in every answer stored
                // a group of n devices n times over (a fifteenth of a busy server's time).
                let projected = projector.states
                var states: [StreamKey: (StreamKey, Int64, DeviceState)] = [:]
                states.reserveCapacity(projected.count)
                for state in projected { states[state.0] = state }
                for (number, index) in round.enumerated() {
                    let end = number + 1 < offsets.count ? offsets[number + 1] : results.count
                    let own = Array(eventOutcomes[offsets[number]..<end])
                    var ownStates: [(StreamKey, Int64, DeviceState)] = []
                    for position in offsets[number]..<end {
                        let event = events[position]
                        if let state = states.removeValue(forKey: StreamKey(appID: appID, userID: event.userID, deviceID: event.deviceID)) {
                            ownStates.append(state)
                        }
                    }
                    committed[index] = CommittedAppend(results: Array(results[offsets[number]..<end]), outcomes: own, states: ownStates)
                }
                pending.removeAll { appended[$0] }
            }
        }
        return try committed.map { append in
            guard let append else { throw PostgresError(.server, message: "request not appended") }
            return append
        }
    }
}
