import EventLog
import Foundation
import LocationAuthorization
import Logging
import PostgresClient
import Synchronization

/// What an append stored, for the answer to its request and for the cache.
struct CommittedAppend: Sendable {
    var results: [AppendResult]
    /// The outcome of each new event, by its index in the request; duplicates have none here.
    var outcomes: [Int: EventOutcome]
    var states: [(StreamKey, Int64, DeviceState)]
}

/// Group commit for small appends: concurrent requests share one transaction and its fsync,
/// and each is still acknowledged only after that transaction commits.
///
/// Requests wait in a queue; up to `maxInFlight` drainers each take what is queued (up to
/// `maxEvents` events), append each app's requests as one combined batch in a savepoint,
/// commit once, and answer them all. When an event is refused (a version conflict, a rule),
/// the savepoint is rolled back, that request alone fails, and the others are appended again.
final class GroupCommitter: Sendable {
    struct Request {
        var appID: UUID
        var events: [NewEvent]
        var decoded: [Int: LocationEvent]
        var continuation: CheckedContinuation<CommittedAppend, any Error>
    }

    private struct State {
        var queue: [Request] = []
        var drainers = 0
    }

    private let pool: PostgresConnectionPool
    private let maxInFlight: Int
    private let maxEvents: Int
    private let state = Mutex(State())

    init(pool: PostgresConnectionPool, maxInFlight: Int = 2, maxEvents: Int = 2000) {
        self.pool = pool
        self.maxInFlight = maxInFlight
        self.maxEvents = maxEvents
    }

    /// Appends one request's events; returns when they are durable.
    func append(appID: UUID, events: [NewEvent], decoded: [Int: LocationEvent]) async throws -> CommittedAppend {
        try await withCheckedThrowingContinuation { continuation in
            let startDrainer = state.withLock { state -> Bool in
                state.queue.append(Request(appID: appID, events: events, decoded: decoded, continuation: continuation))
                guard state.drainers < maxInFlight else { return false }
                state.drainers += 1
                return true
            }
            if startDrainer { Task { await self.drain() } }
        }
    }

    private func drain() async {
        while true {
            let group = state.withLock { state -> [Request] in
                var taken: [Request] = []
                var count = 0
                while let next = state.queue.first, taken.isEmpty || count + next.events.count <= maxEvents {
                    taken.append(state.queue.removeFirst())
                    count += next.events.count
                }
                if taken.isEmpty { state.drainers -= 1 }
                return taken
            }
            if group.isEmpty { return }
            await commit(group)
        }
    }

    private func commit(_ group: [Request]) async {
        typealias Outcome = Result<CommittedAppend, any Error>
        let requests = group.map { ($0.appID, $0.events, $0.decoded) }
        do {
            let outcomes: [Outcome] = try await pool.withConnection { connection in
                try connection.transaction { connection in try Self.appendAll(requests, on: connection) }
            }
            for (request, outcome) in zip(group, outcomes) {
                request.continuation.resume(with: outcome)
            }
        } catch {
            // The commit itself failed: nothing of the group is stored.
            for request in group { request.continuation.resume(throwing: error) }
        }
    }

    /// Appends the requests of each app as one combined batch, in a savepoint: one set of
    /// statements for all of them. When an event is refused, its request alone fails and the
    /// rest are appended again without it.
    private static func appendAll(
        _ requests: [(UUID, [NewEvent], [Int: LocationEvent])], on connection: PostgresConnection
    ) throws -> [Result<CommittedAppend, any Error>] {
        var outcomes = [Result<CommittedAppend, any Error>?](repeating: nil, count: requests.count)
        // Every stream of the group is locked before the first append writes: a later app's
        // append (or a retried round) waiting for a lock after the transaction got its id
        // would put that stream's events out of version order in the global order.
        try EventLog.lock(requests.flatMap { request in
            request.1.map { StreamKey(appID: request.0, userID: $0.userID, deviceID: $0.deviceID) }
        }, on: connection)
        for appID in Set(requests.map(\.0)) {
            var pending = requests.indices.filter { requests[$0].0 == appID }
            while !pending.isEmpty {
                // One round: requests whose ids do not repeat an earlier request's in the round.
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
                do {
                    // Inside the group's transaction, EventLog's append runs in a savepoint.
                    let results = try EventLog.append(appID: appID, events: events, projector: projector, on: connection)
                    for (number, index) in round.enumerated() {
                        let end = number + 1 < offsets.count ? offsets[number + 1] : results.count
                        let eventOutcomes = projector.outcomes
                        var own: [Int: EventOutcome] = [:]
                        for position in offsets[number]..<end { own[position - offsets[number]] = eventOutcomes[position] }
                        outcomes[index] = .success(CommittedAppend(
                            results: Array(results[offsets[number]..<end]), outcomes: own, states: projector.states))
                    }
                    pending.removeAll { round.contains($0) }
                } catch let error as EventLogError {
                    // Find the request of the refused event; it fails with its own index.
                    let failedAt: Int
                    switch error {
                    case .versionConflict(let at, _, _, _), .rejected(let at, _): failedAt = at
                    case .database: throw error
                    }
                    let number = offsets.lastIndex { $0 <= failedAt } ?? 0
                    outcomes[round[number]] = .failure(error.reindexed(failedAt - offsets[number]))
                    pending.removeAll { $0 == round[number] }
                }
            }
        }
        return outcomes.map { $0 ?? .failure(PostgresError(.server, message: "request not appended")) }
    }
}
