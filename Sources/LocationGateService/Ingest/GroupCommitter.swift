import EventLog
import DequeModule
import Foundation
import LocationAuthorization
import Logging
import Metrics
import PostgresClient
import Synchronization

/// What an append stored, for the answer to its request and for the cache.
struct CommittedAppend: Sendable {
    var results: [AppendResult]
    /// The outcome of each new event, by its index in the request; duplicates have none here.
    var outcomes: [Int: EventOutcome]
    /// The committed states of the request's streams (a stream two requests of a group share
    /// goes with the first), for the cache.
    var states: [(StreamKey, Int64, DeviceState)]
}

/// Group commit for small appends: concurrent requests share one transaction and its fsync,
/// and each is still acknowledged only after that transaction commits.
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
        var decoded: [Int: LocationEvent]
        var continuation: CheckedContinuation<CommittedAppend, any Error>
        /// When it was queued, on `clock`.
        var enqueued: Duration
    }

    private struct State {
        var queue: Deque<Request> = []
        var queuedEvents = 0
        var queuedByApp: [UUID: Int] = [:]
        var drainers = 0
        /// A task is watching for requests that waited `spillAfter` (`watchForStuckGroups`).
        var watching = false
    }

    private let pool: PostgresConnectionPool
    private let maxInFlight: Int
    private let spillAfter: Duration
    private let maxEvents: Int
    let maxQueuedEvents: Int
    let maxQueuedEventsPerApp: Int
    let queueTimeout: Duration
    /// The clock of the watcher and the queue timeout (injected by tests).
    private let clock: any MonotonicClock
    private let state = Mutex(State())
    private let isolations = Counter(label: "locgate_group_commit_isolations_total")
    private let groupsCommitted = Counter(label: "locgate_group_commits_total")
    private let eventsCommitted = Counter(label: "locgate_group_commit_events_total")
    /// Requests appended in a transaction so far, every attempt counted (tests bound the cost
    /// of refusals with it).
    private let attempted = Atomic<Int>(0)
    var requestsAttempted: Int { attempted.load(ordering: .relaxed) }

    init(
        pool: PostgresConnectionPool, maxInFlight: Int = 2, spillAfter: Duration = .milliseconds(20),
        maxEvents: Int = 2000, maxQueuedEvents: Int = 20_000, maxQueuedEventsPerApp: Int? = nil,
        queueTimeout: Duration = .seconds(5), clock: any MonotonicClock = SystemClock()
    ) {
        self.maxQueuedEventsPerApp = maxQueuedEventsPerApp ?? max(1_000, maxQueuedEvents / 4)
        self.pool = pool
        self.clock = clock
        self.maxInFlight = maxInFlight
        self.spillAfter = spillAfter
        self.maxEvents = maxEvents
        self.maxQueuedEvents = maxQueuedEvents
        self.queueTimeout = queueTimeout
    }

    /// Events waiting for a group now (a gauge for `/metrics`).
    var queuedEvents: Int { state.withLock { $0.queuedEvents } }

    /// Appends one request's events; returns when they are durable.
    func append(appID: UUID, events: [NewEvent], decoded: [Int: LocationEvent]) async throws -> CommittedAppend {
        try await withCheckedThrowingContinuation { continuation in
            enum Admission { case refuse, refuseApp, queued, watch, startDrainer }
            let enqueued = clock.now
            let admission = state.withLock { state -> Admission in
                guard state.queuedEvents + events.count <= maxQueuedEvents else { return .refuse }
                let appQueued = state.queuedByApp[appID, default: 0]
                guard appQueued == 0 || appQueued + events.count <= maxQueuedEventsPerApp else { return .refuseApp }
                state.queue.append(Request(
                    appID: appID, events: events, decoded: decoded, continuation: continuation, enqueued: enqueued))
                state.queuedEvents += events.count
                state.queuedByApp[appID] = appQueued + events.count
                if state.drainers == 0 {
                    state.drainers = 1
                    return .startDrainer
                }
                // A group is committing and will take this request next, unless it is stuck.
                guard state.drainers < maxInFlight, !state.watching else { return .queued }
                state.watching = true
                return .watch
            }
            switch admission {
            case .refuse:
                continuation.resume(throwing: ServiceError(.overloaded, "the server is busy: too many events are waiting to be appended"))
            case .refuseApp:
                continuation.resume(throwing: ServiceError(
                    .overloaded, "the server is busy: this app has \(maxQueuedEventsPerApp) events waiting to be appended already"))
            case .queued:
                break
            case .watch:
                Task { await self.watchForStuckGroups() }
            case .startDrainer:
                Task { await self.drain() }
            }
        }
    }

    /// While requests wait, checks every `spillAfter` whether the oldest has waited that long,
    /// and then starts another drainer (up to `maxInFlight`): the running groups are stuck on
    /// a lock or a slow disk. One watcher at a time; it ends when the queue is empty, or when
    /// `maxInFlight` drainers run (the next to leave starts it again).
    private func watchForStuckGroups() async {
        while true {
            try? await clock.sleep(for: spillAfter)
            enum Next { case stop, watch, startDrainer }
            let now = clock.now
            let next = state.withLock { state -> Next in
                guard let oldest = state.queue.first?.enqueued, state.drainers < maxInFlight else {
                    state.watching = false
                    return .stop
                }
                guard now - oldest >= spillAfter else { return .watch }
                state.drainers += 1
                return .startDrainer
            }
            switch next {
            case .stop: return
            case .watch: continue
            case .startDrainer: Task { await self.drain() }
            }
        }
    }

    private func drain() async {
        var committed = false
        var rewatch = false
        while true {
            let oldest = clock.now - queueTimeout
            let (group, expired) = state.withLock { state -> ([Request], [Request]) in
                // After a group, a drainer leaves while another runs: the other takes the queue
                // when its group is done (the last drainer leaves only with the queue empty), so
                // extra drainers last only as long as a group is stuck, and one group at a time
                // resumes after it. If the others are all stuck, the watcher starts one again.
                if committed && state.drainers > 1 {
                    state.drainers -= 1
                    if !state.queue.isEmpty && !state.watching {
                        state.watching = true
                        rewatch = true
                    }
                    return ([], [])
                }
                var taken: [Request] = []
                var expired: [Request] = []
                var count = 0
                while let next = state.queue.first, taken.isEmpty || count + next.events.count <= maxEvents {
                    state.queue.removeFirst()
                    state.queuedEvents -= next.events.count
                    let left = state.queuedByApp[next.appID, default: 0] - next.events.count
                    state.queuedByApp[next.appID] = left > 0 ? left : nil
                    if next.enqueued < oldest {
                        expired.append(next)
                        continue
                    }
                    taken.append(next)
                    count += next.events.count
                }
                if taken.isEmpty { state.drainers -= 1 }
                return (taken, expired)
            }
            for request in expired {
                request.continuation.resume(throwing: ServiceError(
                    .overloaded, "the server is busy: the append waited more than \(queueTimeout) for its turn"))
            }
            if group.isEmpty {
                if rewatch { Task { await self.watchForStuckGroups() } }
                return
            }
            await commit(group)
            committed = true
        }
    }

    /// A request of the group refused one of its events; the transaction rolled back.
    private struct Refused: Error {
        var request: Int
        var error: EventLogError
    }

    /// Appends the group and answers every request of it.
    private func commit(_ group: [Request]) async {
        for (request, outcome) in zip(group, await append(group)) {
            request.continuation.resume(with: outcome)
        }
    }

    /// Appends the group in one transaction. When a request's event is refused (a version
    /// conflict, a rule), the transaction is rolled back, that request alone fails, and the
    /// others are appended again in a new one; refusals are rare, so the common case pays for
    /// no savepoints. A unique violation (a retry racing another group with the same event id)
    /// is retried too: the next attempt answers it as a duplicate. When the database refuses
    /// a group of several for another reason that is not an outage, each request is appended
    /// on its own (a group of one), so that the one at fault fails alone.
    private func append(_ group: [Request]) async -> [Result<CommittedAppend, any Error>] {
        var outcomes = [Result<CommittedAppend, any Error>?](repeating: nil, count: group.count)
        var pending = Array(group.indices)
        var races = 0
        var refusals = 0
        while !pending.isEmpty {
            let requests = pending.map { (group[$0].appID, group[$0].events, group[$0].decoded) }
            attempted.add(pending.count, ordering: .relaxed)
            do {
                let committed = try await pool.withConnection { connection in
                    try connection.transaction { connection in try Self.appendAll(requests, on: connection) }
                }
                for (number, index) in pending.enumerated() { outcomes[index] = .success(committed[number]) }
                groupsCommitted.increment()
                eventsCommitted.increment(by: pending.reduce(0) { $0 + group[$1].events.count })
                pending = []
            } catch let refused as Refused {
                let index = pending[refused.request]
                outcomes[index] = .failure(refused.error)
                pending.remove(at: refused.request)
                refusals += 1
                if refusals >= 2 && pending.count > 1 {
                    // Several refused requests: halves, in order (a stream's requests keep
                    // their order), each a group with its own budget of refusals.
                    let halves = [Array(pending[..<(pending.count / 2)]), Array(pending[(pending.count / 2)...])]
                    for half in halves {
                        for (index, outcome) in zip(half, await append(half.map { group[$0] })) { outcomes[index] = outcome }
                    }
                    pending = []
                }
            } catch where Self.isUniqueRace(error) && races < 2 {
                races += 1
            } catch where Self.isMissingPartition(error) && races < 2 {
                // The log outran its partitions (the servers create them ahead, once a minute):
                // create them now and append again; nothing was stored.
                races += 1
                do {
                    try await pool.withConnection { connection in _ = try EventLog.ensurePartitions(on: connection) }
                } catch {
                    for index in pending { outcomes[index] = .failure(error) }
                    pending = []
                }
            } catch where pending.count > 1 && !Self.isOutage(error) {
                // Something of one request (data the database refused, a defect) failed the
                // whole group: find it by appending each request on its own.
                isolations.increment()
                for index in pending { outcomes[index] = await append([group[index]])[0] }
                pending = []
            } catch {
                // The transaction failed: nothing of what is pending is stored.
                for index in pending { outcomes[index] = .failure(error) }
                pending = []
            }
        }
        return outcomes.map { $0 ?? .failure(PostgresError(.server, message: "request not appended")) }
    }

    /// A retry of an event id raced another group: appending again answers it as a duplicate.
    private static func isUniqueRace(_ error: any Error) -> Bool {
        (error as? PostgresError)?.isUniqueViolation == true
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
        _ requests: [(UUID, [NewEvent], [Int: LocationEvent])], on connection: PostgresConnection
    ) throws -> [CommittedAppend] {
        var committed = [CommittedAppend?](repeating: nil, count: requests.count)
        // Every stream of the group is locked before the first append writes: a later app's
        // append (or a later round) waiting for a lock after the transaction got its id would
        // put that stream's events out of version order in the global order.
        try EventLog.lock(requests.flatMap { request in
            request.1.map { StreamKey(appID: request.0, userID: $0.userID, deviceID: $0.deviceID) }
        }, on: connection)
        for appID in Set(requests.map(\.0)) {
            var pending = requests.indices.filter { requests[$0].0 == appID }
            while !pending.isEmpty {
                // One round: requests whose ids do not repeat an earlier request's in the round
                // (a later round finds them stored, and answers them as duplicates).
                var round: [Int] = []
                var ids: Set<UUID> = []
                for index in pending where requests[index].1.allSatisfy({ !ids.contains($0.id) }) {
                    round.append(index)
                    ids.formUnion(requests[index].1.map(\.id))
                }
                var events: [NewEvent] = []
                var decoded: [Int: LocationEvent] = [:]
                var offsets: [Int] = []
                for index in round {
                    offsets.append(events.count)
                    for (position, event) in requests[index].1.enumerated() {
                        decoded[events.count] = requests[index].2[position]
                        events.append(event)
                    }
                }
                let projector = DeviceProjector(events: decoded)
                let results: [AppendResult]
                do {
                    results = try EventLog.appendInTransaction(
                        appID: appID, events: events, projector: projector, streamsLocked: true, on: connection)
                } catch let error as EventLogError {
                    // Find the request of the refused event; it fails with its own index.
                    let failedAt: Int
                    switch error {
                    case .versionConflict(let at, _, _, _), .rejected(let at, _): failedAt = at
                    case .database: throw error
                    }
                    let number = offsets.lastIndex { $0 <= failedAt } ?? 0
                    throw Refused(request: round[number], error: error.reindexed(failedAt - offsets[number]))
                }
                let eventOutcomes = projector.outcomes
                // Each request carries the states of its own streams only: the cache stores
                // what each answer carries, and the whole round's states in every answer stored
                // a group of n devices n times over (a fifteenth of a busy server's time).
                var states: [StreamKey: (StreamKey, Int64, DeviceState)] = [:]
                for state in projector.states { states[state.0] = state }
                for (number, index) in round.enumerated() {
                    let end = number + 1 < offsets.count ? offsets[number + 1] : results.count
                    var own: [Int: EventOutcome] = [:]
                    var ownStates: [(StreamKey, Int64, DeviceState)] = []
                    for position in offsets[number]..<end {
                        own[position - offsets[number]] = eventOutcomes[position]
                        let event = events[position]
                        if let state = states.removeValue(forKey: StreamKey(appID: appID, userID: event.userID, deviceID: event.deviceID)) {
                            ownStates.append(state)
                        }
                    }
                    committed[index] = CommittedAppend(results: Array(results[offsets[number]..<end]), outcomes: own, states: ownStates)
                }
                pending.removeAll { round.contains($0) }
            }
        }
        return try committed.map { append in
            guard let append else { throw PostgresError(.server, message: "request not appended") }
            return append
        }
    }
}
