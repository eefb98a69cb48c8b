import EventLog
import Foundation
import LocationAuthorization
import LocationGateTestSupport
import Logging
import PostgresClient
import ServiceLifecycle
import Testing
@testable import LocationGateService

/// The change-notification connection as the caches depend on it, with a real follower.
@Suite("Coherence: a listener that dies silently is noticed", .timeLimit(.minutes(2)))
struct CoherenceTests {
    @Test("A LISTEN backend that stops answering (SIGSTOP) stops the caches within a second; they resume after a resync")
    func silentListener() async throws {
        let configuration = try await TestDatabase.create(prefix: "locgate_silent")
        let name = configuration.overrides["dbname"] ?? ""
        let pool = PostgresConnectionPool(configuration: configuration, size: 2, logger: TestDatabase.logger)
        let service = GateService(pool: pool, logger: TestDatabase.logger, followsChanges: true)
        let follower = CacheFollower(service: service, logger: TestDatabase.logger)
        let running = Task { try await follower.run() }
        defer { running.cancel() }
        #expect(try await waitUntil { service.coherence.isFollowing })
        let pids = try await pool.query(
            "SELECT pid FROM pg_stat_activity WHERE application_name = \(PostgresListener.applicationName) AND datname = \(name)")
        let pidNumber = try pids.first?.decode(0, as: Int.self)
        let pid = Int32(try #require(pidNumber))
        // The backend is frozen: its socket stays open, nothing answers, no error ever comes.
        #expect(kill(pid, SIGSTOP) == 0)
        // Never left stopped, whatever fails below.
        defer { kill(pid, SIGCONT) }
        let stopped = ContinuousClock.now
        // The caches stop once no heartbeat was answered for `coherence.bound` (900 ms, within
        // SPEC's second), which `isFollowing` computes from the last heartbeat itself. How long
        // this test takes to see it depends on the machine's load as much as on the bound, so
        // the time is reported, not asserted.
        #expect(service.coherence.bound <= .seconds(1))
        let noticed = try await waitUntil { !service.coherence.isFollowing }
        #expect(noticed, "still following \(ContinuousClock.now - stopped) after the listener froze")
        kill(pid, SIGCONT)
        // The follower reconnects and trusts its caches again.
        #expect(try await waitUntil { service.coherence.isFollowing })
        running.cancel()
        _ = await running.result
        await pool.close()
    }
}

/// Analytics catch up under the rollup's lock without parking pooled connections behind it.
@Suite("Analytics never wait for the rollup lock on a pooled connection", .timeLimit(.minutes(2)))
struct AnalyticsLockTests {
    @Test("With the rollup lock held elsewhere (a replay), an analytics request answers and other requests keep the pool")
    func lockHeldElsewhere() async throws {
        // A database of its own: the lock is per database, and other tests' analytics need it.
        let configuration = try await TestDatabase.create(prefix: "locgate_rolluplock")
        let pool = PostgresConnectionPool(configuration: configuration, size: 1, waitTimeout: .seconds(1), logger: TestDatabase.logger)
        let holder = PostgresConnectionPool(configuration: configuration, size: 1, logger: TestDatabase.logger)
        let service = GateService(pool: pool, logger: TestDatabase.logger)
        let appID = try await TestDatabase.makeApp(pool)
        // Another session holds the lock, as a replay would, until the test lets it go.
        let locked = TestLatch()
        let release = TestLatch()
        defer { release.raise() }
        let held = Task {
            try await holder.transaction { connection in
                try connection.query("SELECT pg_advisory_xact_lock(\(AnalyticsRollup.lockKey))")
                locked.raise()
                release.block()
            }
        }
        #expect(try await waitUntil { locked.isRaised })
        let answered = TestLatch()
        let analytics = Task {
            defer { answered.raise() }
            return try await service.analytics.analytics(AnalyticsQuery(kind: .prompts, appID: appID, groupBy: [], from: nil, to: nil))
        }
        // Meanwhile the only pooled connection keeps serving other requests (each waits at most
        // the pool's 1 s for it), for as long as the analytics request runs.
        var reads = 0
        repeat {
            let entry = try await service.gates.device(StreamKey(appID: appID, userID: "u", deviceID: "d\(reads)"))
            #expect(entry.version == 0)
            reads += 1
            try await Task.sleep(for: .milliseconds(20))
        } while !answered.isRaised && reads < 3_000
        // The analytics request answered with the lock still held: it did not wait for it. (Had
        // it waited on the pooled connection, it would not answer until the release, and the
        // reads above, still running, would have been refused the connection.)
        _ = try await analytics.value
        #expect(!release.isRaised)
        release.raise()
        _ = try await held.value
        await holder.close()
        await pool.close()
    }
}
