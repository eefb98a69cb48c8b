import EventLog
import Foundation
import LocationAuthorization
import PostgresClient
import Synchronization

/// Group commit for exposures (SPEC §16: a device's first evaluation records its exposure
/// "durably before the answer (group-committed like appends)"): the first evaluations that
/// arrive together share one statement, and each is still answered only after it committed.
///
/// The queue is the appends' (`GroupCommitQueue`, its admission, bounds, spill and timeout
/// decided there and tested without I/O), with an evaluation's exposures as a request (a bulk
/// evaluation asks for all of its experiments at once: one request, one wait). A drainer takes
/// what is queued, up to `maxExposures`, and writes it with one multi-row
/// `INSERT ... ON CONFLICT DO NOTHING ... RETURNING` that adds to the counts in the same
/// statement (`ExperimentExposures.record`), an autocommit statement: its answer is its COMMIT.
/// The units another evaluation stored first (another server, or an earlier group) are read
/// back after it, so that racing evaluations agree on the stored variant. Then every request of
/// the group is answered. Nothing is answered before that: an exposure acknowledged is stored.
///
/// Beyond `maxQueued` exposures waiting (an app at most a quarter of them, as appends), a
/// request is refused at once (`overloaded`, a 503 with Retry-After), and one that waited
/// longer than `queueTimeout` for its turn is refused without being written.
///
/// A statement the database refuses for another reason than an outage is written again one
/// experiment at a time, so that one experiment's fault (one deleted under the group: its
/// foreign key) fails no other experiment's evaluations; an experiment deleted meanwhile
/// records nothing, as one stopped does (the caller reads it again).
final class ExposureCommitter: Sendable {
    /// One exposure an evaluation asks for: `unit` exposed to `variant` of `experiment`, first
    /// evaluated on `stream`.
    struct Exposing: Sendable, Hashable {
        var appID: UUID
        var experiment: String
        var unit: ExperimentUnit
        var variant: String
        var stream: StreamKey

        /// Where it is stored: the primary key of `experiment_exposures`.
        var place: Place { Place(appID: appID, experiment: experiment, unit: unit.text) }
    }

    /// An exposure's key in `experiment_exposures`.
    struct Place: Sendable, Hashable {
        var appID: UUID
        var experiment: String
        var unit: String
    }

    /// An experiment of an app: what a group is split by when the database refuses it.
    private struct ExperimentPlace: Hashable {
        var appID: UUID
        var experiment: String
    }

    /// One evaluation's exposures and its waiter.
    struct Request: Sendable {
        var exposures: [Exposing]
        var continuation: CheckedContinuation<[ExperimentExposure?], any Error>
    }

    private let pool: PostgresConnectionPool
    private let spillAfter: Duration
    let maxQueued: Int
    let maxQueuedPerApp: Int
    let queueTimeout: Duration
    /// The watcher's and the queue timeout's clock, as time since the committer started.
    private let clock: ElapsedTime
    private let state: Mutex<GroupCommitQueue<Request>>

    /// - Parameters:
    ///   - maxInFlight: groups written at once (one while they commit promptly; another starts
    ///     when the oldest waiting request has waited `spillAfter`).
    ///   - maxExposures: exposures in one group's statement at most.
    ///   - maxQueued: exposures that may wait; more are refused (`overloaded`).
    ///   - queueTimeout: a request that waited longer for its turn is refused unwritten.
    init(
        pool: PostgresConnectionPool, maxInFlight: Int = 2, spillAfter: Duration = .milliseconds(20), maxExposures: Int = 1000,
        maxQueued: Int = 10_000, maxQueuedPerApp: Int? = nil, queueTimeout: Duration = .seconds(4),
        clock: any Clock<Duration> = ContinuousClock()
    ) {
        let maxQueuedPerApp = maxQueuedPerApp ?? max(1_000, maxQueued / 4)
        self.pool = pool
        self.spillAfter = spillAfter
        self.maxQueued = maxQueued
        self.maxQueuedPerApp = maxQueuedPerApp
        self.queueTimeout = queueTimeout
        self.clock = ElapsedTime(clock)
        self.state = Mutex(GroupCommitQueue(
            maxInFlight: max(1, maxInFlight), spillAfter: spillAfter, maxEvents: maxExposures, maxQueuedEvents: maxQueued,
            maxQueuedEventsPerApp: maxQueuedPerApp, queueTimeout: queueTimeout))
    }

    /// Exposures waiting for a group now.
    var queuedExposures: Int { state.withLock { $0.queuedEvents } }

    /// Records `exposures` (of one app), and returns, at each one's index, the exposure stored
    /// for its unit (this one, or the one another evaluation stored first), or nil when its
    /// experiment no longer runs with that variant (stopped, deleted, made again). Returns when
    /// the statement that wrote them has committed.
    func record(_ exposures: [Exposing]) async throws -> [ExperimentExposure?] {
        guard let appID = exposures.first?.appID else { return [] }
        return try await withCheckedThrowingContinuation { continuation in
            let request = Request(exposures: exposures, continuation: continuation)
            let now = clock.now
            let action = state.withLock { queue in
                queue.enqueue(request, appID: appID, events: exposures.count, at: now)
            }
            switch action {
            case .refuse(.queueFull):
                continuation.resume(throwing: ServiceError(.overloaded, "the server is busy: too many exposures are waiting to be recorded"))
            case .refuse(.appShareFull):
                continuation.resume(throwing: ServiceError(
                    .overloaded, "the server is busy: this app has \(maxQueuedPerApp) exposures waiting to be recorded already"))
            case .queued:
                break
            case .startWatcher:
                Task { await self.watchForStuckGroups() }
            case .startDrainer:
                Task { await self.drain() }
            }
        }
    }

    /// While requests wait, wakes every `spillAfter` and lets the queue start another drainer
    /// when the running group is stuck (as `GroupCommitter`'s watcher).
    private func watchForStuckGroups() async {
        while true {
            try? await clock.sleep(for: spillAfter)
            let now = clock.now
            switch state.withLock({ $0.watcherWoke(at: now) }) {
            case .stop: return
            case .wait: continue
            case .startDrainer: Task { await self.drain() }
            }
        }
    }

    /// Writes the groups the queue hands out until it says to stop, answering each group's
    /// requests after its statement committed.
    private func drain() async {
        let started = clock.now
        var action = state.withLock { $0.drainerStarted(at: started) }
        while true {
            switch action {
            case .commit(let group, let expired):
                refuse(expired)
                let asked = group.map(\.exposures)
                let outcomes: [Result<[ExperimentExposure?], any Error>]
                do {
                    outcomes = try await pool.withConnection { connection in Self.write(asked, on: connection) }
                } catch {
                    // No connection (the database is down, the pool's wait timed out): the
                    // group fails as a failed statement would.
                    outcomes = group.map { _ in .failure(error) }
                }
                for (request, outcome) in zip(group, outcomes) {
                    request.continuation.resume(with: outcome)
                }
                let now = clock.now
                action = state.withLock { $0.groupFinished(at: now) }
            case .stop(let expired, let startWatcher):
                refuse(expired)
                if startWatcher { Task { await self.watchForStuckGroups() } }
                return
            }
        }
    }

    /// Answers requests that waited longer than `queueTimeout` for their turn.
    private func refuse(_ expired: [Request]) {
        for request in expired {
            request.continuation.resume(throwing: ServiceError(
                .overloaded, "the server is busy: the exposure waited more than \(queueTimeout) for its turn"))
        }
    }

    /// Writes one group's exposures (each unit once, however many of its evaluations asked) and
    /// returns each request's outcome, at its index.
    static func write(_ requests: [[Exposing]], on connection: PostgresConnection) -> [Result<[ExperimentExposure?], any Error>] {
        var unique: [Place: Exposing] = [:]
        for exposures in requests {
            for exposure in exposures where unique[exposure.place] == nil { unique[exposure.place] = exposure }
        }
        // In one order on every server, so that two groups inserting the same units (or adding
        // to the same counts) wait for each other rather than deadlock.
        let ordered = unique.values.sorted {
            ($0.appID.lowercasedText, $0.experiment, $0.unit.text) < ($1.appID.lowercasedText, $1.experiment, $1.unit.text)
        }
        var stored: [Place: ExperimentExposure] = [:]
        var failed: [ExperimentPlace: any Error] = [:]
        do {
            stored = try recordRetrying(ordered, on: connection)
        } catch {
            let experiments = Dictionary(grouping: ordered) { ExperimentPlace(appID: $0.appID, experiment: $0.experiment) }
            if isOutage(error) {
                return requests.map { _ in .failure(error) }
            }
            if experiments.count == 1 {
                // One experiment, refused: deleted under the group (its foreign key), so nothing
                // is recorded and its evaluations read it again; any other fault fails them.
                if !isForeignKeyViolation(error) { return requests.map { _ in .failure(error) } }
            } else {
                // One experiment's fault fails no other's: each is written on its own.
                let parts = experiments.sorted {
                    ($0.key.appID.lowercasedText, $0.key.experiment) < ($1.key.appID.lowercasedText, $1.key.experiment)
                }
                for (experiment, exposures) in parts {
                    do {
                        let written = try recordRetrying(exposures, on: connection)
                        stored.merge(written) { first, _ in first }
                    } catch where isForeignKeyViolation(error) {
                        continue
                    } catch {
                        failed[experiment] = error
                    }
                }
            }
        }
        return requests.map { exposures in
            for exposure in exposures {
                if let error = failed[ExperimentPlace(appID: exposure.appID, experiment: exposure.experiment)] { return .failure(error) }
            }
            return .success(exposures.map { stored[$0.place] })
        }
    }

    /// `ExperimentExposures.record`, written once more after a deadlock or a serialization
    /// failure (nothing of the first attempt was stored).
    private static func recordRetrying(_ exposures: [Exposing], on connection: PostgresConnection) throws -> [Place: ExperimentExposure] {
        do {
            return try ExperimentExposures.record(exposures, on: connection)
        } catch let error as PostgresError where error.isSerializationFailure && !connection.isBroken {
            return try ExperimentExposures.record(exposures, on: connection)
        }
    }

    /// The database itself failed: writing again, or in parts, would not help.
    private static func isOutage(_ error: any Error) -> Bool {
        guard let postgres = error as? PostgresError else { return false }
        return postgres.isUnavailable || postgres.endsSession
    }

    /// 23503: an exposure's experiment is gone (deleted after the group read it as running).
    private static func isForeignKeyViolation(_ error: any Error) -> Bool {
        (error as? PostgresError)?.sqlState == "23503"
    }
}
