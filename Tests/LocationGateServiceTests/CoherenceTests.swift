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
@Suite("Coherence: a listener that dies silently is noticed")
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
        #expect(try await Self.until(.seconds(5)) { service.coherence.isFollowing })
        let pids = try await pool.query(
            "SELECT pid FROM pg_stat_activity WHERE application_name = \(PostgresListener.applicationName) AND datname = \(name)")
        let pidNumber = try pids.first?.decode(0, as: Int.self)
        let pid = Int32(try #require(pidNumber))
        // The backend is frozen: its socket stays open, nothing answers, no error ever comes.
        #expect(kill(pid, SIGSTOP) == 0)
        let clock = ContinuousClock()
        let stopped = clock.now
        let noticed = try await Self.until(.seconds(3)) { !service.coherence.isFollowing }
        let took = clock.now - stopped
        kill(pid, SIGCONT)
        #expect(noticed && took < .seconds(1), "noticed \(noticed) after \(took)")
        // The follower reconnects and trusts its caches again.
        #expect(try await Self.until(.seconds(5)) { service.coherence.isFollowing })
        running.cancel()
        _ = await running.result
        await pool.close()
    }

    static func until(_ limit: Duration, _ condition: () -> Bool) async throws -> Bool {
        let clock = ContinuousClock()
        let start = clock.now
        while clock.now - start < limit {
            if condition() { return true }
            try await Task.sleep(for: .milliseconds(10))
        }
        return condition()
    }
}

/// Analytics catch up under the rollup's lock without parking pooled connections behind it.
@Suite("Analytics never wait for the rollup lock on a pooled connection")
struct AnalyticsLockTests {
    @Test("With the rollup lock held elsewhere (a replay), an analytics request answers and other requests keep the pool")
    func lockHeldElsewhere() async throws {
        // A database of its own: the lock is per database, and other tests' analytics need it.
        let configuration = try await TestDatabase.create(prefix: "locgate_rolluplock")
        let pool = PostgresConnectionPool(configuration: configuration, size: 1, waitTimeout: .seconds(1), logger: TestDatabase.logger)
        let holder = PostgresConnectionPool(configuration: configuration, size: 1, logger: TestDatabase.logger)
        let service = GateService(pool: pool, logger: TestDatabase.logger)
        let appID = try await TestDatabase.makeApp(pool)
        // Another session holds the lock for 4 s, as a replay would.
        let held = Task {
            try await holder.transaction { connection in
                try connection.query("SELECT pg_advisory_xact_lock(\(AnalyticsRollup.lockKey))")
                try connection.query("SELECT pg_sleep(4)")
            }
        }
        try await Task.sleep(for: .milliseconds(200))
        let analytics = Task {
            try await service.analytics(AnalyticsQuery(kind: .prompts, appID: appID, groupBy: [], from: nil, to: nil))
        }
        // Meanwhile the only pooled connection keeps serving other requests.
        for index in 0..<5 {
            try await Task.sleep(for: .milliseconds(100))
            let entry = try await service.device(StreamKey(appID: appID, userID: "u", deviceID: "d\(index)"))
            #expect(entry.version == 0)
        }
        _ = try await analytics.value
        _ = try await held.value
        await holder.close()
        await pool.close()
    }
}
