@testable import EventLog
import Foundation
import LocationAuthorization
import LocationGateTestSupport
import PostgresClient
import Synchronization
import Testing
@testable import LocationGateService

/// Group commit's watcher and queue timeout on a manual clock: a group stuck on a stream's lock
/// holds up the queue until the watcher, at `spillAfter` of the clock's time, starts another
/// group; a request that waited `queueTimeout` is refused. The clock moves only when the test
/// moves it, so each step is certain rather than likely.
@Suite("Group commit: the watcher and the queue timeout on an injected clock", .timeLimit(.minutes(2)))
struct GroupCommitWatcherTests {
    static func submission(_ device: String) -> EventSubmission {
        EventSubmission(
            id: UUID(), userId: "u", deviceId: device, occurredAt: Date(timeIntervalSince1970: 1_795_341_600),
            event: .appStateChanged(.foreground, backgroundIndicator: false))
    }

    /// Holds a stream's append lock in a transaction of its own until `release` is signalled.
    struct LockHolder {
        let pool: PostgresConnectionPool
        let release = DispatchSemaphore(value: 0)
        let task: Task<Void, any Error>

        init(_ key: StreamKey) async throws {
            let pool = try await TestDatabase.pool(size: 1)
            let release = self.release
            let locked = Mutex(false)
            self.pool = pool
            self.task = Task {
                try await pool.transaction { connection in
                    try connection.query("SELECT pg_advisory_xact_lock(\(key.lockKey))")
                    locked.withLock { $0 = true }
                    release.wait()
                }
            }
            #expect(try await waitUntil { locked.withLock { $0 } })
        }

        func finish() async throws {
            release.signal()
            try await task.value
            await pool.close()
        }
    }

    /// Whether a transaction is waiting for the stream's advisory lock (its key is classid:objid).
    static func someoneWaits(for key: StreamKey, on pool: PostgresConnectionPool) async throws -> Bool {
        let high = Int64(UInt32(truncatingIfNeeded: key.lockKey >> 32))
        let low = Int64(UInt32(truncatingIfNeeded: key.lockKey))
        return try await pool.query(
            """
            SELECT count(*) FROM pg_locks
            WHERE locktype = 'advisory' AND NOT granted AND classid::bigint = \(high) AND objid::bigint = \(low)
            """).first?.decode(0, as: Int64.self) == 1
    }

    @Test("A request queued behind a stuck group is appended once spillAfter has passed on the clock, not before")
    func watcherSpillsOnTheClock() async throws {
        let clock = ManualClock()
        let pool = try await TestDatabase.pool(size: 6)
        let service = GateService(pool: pool, logger: TestDatabase.logger, clock: clock)
        let appID = try await TestDatabase.makeApp(pool)
        let held = StreamKey(appID: appID, userID: "u", deviceID: "held")
        let holder = try await LockHolder(held)

        let stuck = Task { try await service.events.ingest(appID: appID, submissions: [Self.submission("held")]) }
        #expect(try await waitUntil { try await Self.someoneWaits(for: held, on: pool) })
        let done = Mutex(false)
        let free = Task {
            defer { done.withLock { $0 = true } }
            return try await service.events.ingest(appID: appID, submissions: [Self.submission("free")])
        }
        // The free request is queued and the watcher sleeps on the clock: with the clock still,
        // nothing but the stuck group could take it, and that group cannot finish.
        #expect(try await waitUntil { service.health.queuedEvents == 1 && clock.sleepers == 1 })
        #expect(!done.withLock { $0 })
        clock.advance(by: .milliseconds(20))
        #expect(try await free.value[0].version == 1)
        #expect(try await Self.someoneWaits(for: held, on: pool), "the stuck group still waits for its lock")

        try await holder.finish()
        #expect(try await stuck.value[0].version == 1)
        await pool.close()
    }

    @Test("A request that waited queueTimeout on the clock is refused overloaded without being appended")
    func queueTimeoutOnTheClock() async throws {
        let clock = ManualClock()
        let pool = try await TestDatabase.pool(size: 6)
        let service = GateService(pool: pool, logger: TestDatabase.logger, clock: clock)
        let appID = try await TestDatabase.makeApp(pool)
        let held = StreamKey(appID: appID, userID: "u", deviceID: "held")
        let holder = try await LockHolder(held)

        let stuck = Task { try await service.events.ingest(appID: appID, submissions: [Self.submission("held")]) }
        #expect(try await waitUntil { try await Self.someoneWaits(for: held, on: pool) })
        let late = Task { () -> ServiceError.Code? in
            do {
                _ = try await service.events.ingest(appID: appID, submissions: [Self.submission("late")])
                return nil
            } catch {
                return (error as? ServiceError)?.code
            }
        }
        #expect(try await waitUntil { service.health.queuedEvents == 1 && clock.sleepers == 1 })
        // Past the queue timeout (twice the pool's wait) the next group finds it expired.
        clock.advance(by: pool.waitTimeout * 2 + .seconds(1))
        #expect(await late.value == .overloaded)
        let lateKey = StreamKey(appID: appID, userID: "u", deviceID: "late")
        #expect(try await service.log.version(of: lateKey) == 0, "nothing of the refused request was stored")

        try await holder.finish()
        #expect(try await stuck.value[0].version == 1)
        await pool.close()
    }
}
