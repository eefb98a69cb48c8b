import EventLog
import Foundation
import LocationAuthorization
import LocationGateService
import LocationGateTestSupport
import PostgresClient
import Testing

/// SPEC §5 "Resources": every change reaches the change feed within 1 s of its
/// acknowledgement, maintenance (an erasure's statistics, a retention batch) included. The feed
/// reads only below the oldest running transaction, so no erasure step, completion, retention
/// batch or statement after them may keep a transaction id while it waits or samples.
@Suite("Maintenance never holds the change feed back", .timeLimit(.minutes(3)))
struct MaintenanceFeedTests {
    @Test("While one app erases a person every half second (the erasure worker at work), runs a retention of two batches, and a table of counters is held for 3 s as a VACUUM holds it, every append of another app reaches its change feed within 1 s")
    func feedKeepsUp() async throws {
        let pool = try await TestDatabase.privatePool(prefix: "locgate_maintenance_feed", size: 8)
        let service = GateService(pool: pool, logger: TestDatabase.logger)
        let erasing = try await TestDatabase.makeApp(pool, name: "erasing")
        let watched = try await TestDatabase.makeApp(pool, name: "watched")
        // The erasing app: people to erase, and 3,000 old events for two retention batches.
        let people = (0..<40).map { _ in ErasurePagingTests.personID() }
        var submissions = people.flatMap { ErasurePagingTests.device($0, "phone", count: 4) }
        for index in 0..<300 { submissions += ErasurePagingTests.device("old-\(index)", "phone", count: 10) }
        try await ErasurePagingTests.ingest(service, erasing, submissions)
        try await service.retention.setRetentionDays(appID: erasing, days: 1, actor: .cli)

        // The servers' erasure worker, and a request every half second.
        let worker = Task { try await ErasureWorker(erasure: service.erasure, logger: TestDatabase.logger).run() }
        let requests = Task {
            var ids: [UUID] = []
            for person in people {
                ids.append(try await service.erasure.requestErasure(appID: erasing, userID: person, actor: .cli).id)
                try await Task.sleep(for: .milliseconds(500))
            }
            return ids
        }
        func erasuresDone() async throws -> Int64 {
            try await ErasurePagingTests.count(pool, "SELECT count(*) FROM erasures WHERE app_id = \(erasing) AND status = 'done'")
        }
        #expect(try await waitUntil(timeout: .seconds(30)) { try await erasuresDone() >= 1 }, "the worker completes erasures")

        // Maintenance that takes long, as it does on a large database (here the tables are
        // small, and ANALYZE or a batch take milliseconds): a session holds a table of counters
        // in the mode VACUUM takes, for 3 s, so that anything that waits for it waits that long.
        let holderDone = TestLatch()
        let holder = Task {
            defer { holderDone.raise() }
            try await pool.withConnection { connection in
                try connection.transaction { connection in
                    try connection.query("LOCK TABLE archived_rollups IN SHARE UPDATE EXCLUSIVE MODE")
                    TestLatch().block(atMost: .seconds(3))
                }
            }
        }
        let retentionDone = TestLatch()
        let retention = Task {
            defer { retentionDone.raise() }
            return try await service.retention.runRetention(appID: erasing, now: Date().addingTimeInterval(2 * 86_400))
        }

        // The other app appends one event at a time; each must reach its feed within 1 s.
        var position = try await service.push.feedHead()
        var appended = 0
        var late: [Int] = []
        while appended < 20 || !holderDone.isRaised || !retentionDone.isRaised {
            try #require(appended < 500, "the maintenance does not end")
            let results = try await service.events.ingest(appID: watched, submissions: [EventSubmission(
                id: UUID(), userId: "watcher", deviceId: "phone", occurredAt: Date(timeIntervalSince1970: 1_793_000_000 + Double(appended)),
                event: .locationServicesChanged(enabled: appended % 2 == 0))])
            let version = try #require(results.first?.version)
            appended += 1
            var transaction: UInt64?
            let reached = try await waitUntil(timeout: .seconds(1)) {
                let messages = try await service.push.changes(appID: watched, after: position, limit: 100)
                if let last = messages.last { position = last.position }
                if messages.contains(where: { $0.userId == "watcher" && $0.version == version }) { return true }
                // Other suites' transactions, in their own databases on the same server, hold
                // the cluster's horizon too: only this database's are the product's doing.
                if transaction == nil {
                    transaction = try await pool.query(
                        "SELECT tx_id::text FROM events WHERE app_id = \(watched) AND user_id = 'watcher' AND version = \(version)"
                    ).first?.decode(0, as: UInt64.self)
                }
                guard let transaction else { return false }
                let held = try await Self.heldBack(pool, before: transaction)
                return !held
            }
            if !reached { late.append(appended) }
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(late.isEmpty, "appends \(late) of \(appended) were not readable by the change feed within 1 s of their acknowledgement")

        // The maintenance did happen meanwhile.
        let report = try await retention.value
        #expect(report.events >= 3000, "\(report)")
        try await holder.value
        requests.cancel()
        _ = await requests.result
        #expect(try await erasuresDone() >= 3)
        worker.cancel()
        _ = await worker.result
        await pool.close()
    }

    /// Whether a transaction of this test's database, older than `transaction` (an event's
    /// `tx_id`), is still running: what holds that event back from the feed here.
    static func heldBack(_ pool: PostgresConnectionPool, before transaction: UInt64) async throws -> Bool {
        try await pool.query(
            """
            SELECT EXISTS (
                SELECT 1 FROM pg_stat_activity
                WHERE datname = current_database() AND backend_xid IS NOT NULL
                  AND age(backend_xid) > age(\(String(transaction & 0xFFFF_FFFF))::xid))
            """
        ).first?.decode(0, as: Bool.self) ?? true
    }
}
