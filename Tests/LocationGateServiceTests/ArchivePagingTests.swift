import EventLog
import Foundation
import LocationAuthorization
import LocationGateService
import LocationGateSimulation
import LocationGateTestSupport
import PostgresClient
import Testing

/// `locgate archive` holds a page of events at a time, whatever the archive's size: the file is
/// written a page at a time in global order and the snapshot folded a page at a time in stream
/// order. With pages of two and three events, so that nearly every stream spans pages, the
/// result must be exactly what the whole log says.
@Suite("Archive in pages: the snapshot and the file are exact with tiny pages", .timeLimit(.minutes(5)))
struct ArchivePagingTests {
    struct Archived: Hashable {
        var version: Int64
        var lastOccurred: Date
    }

    /// Every event of the app: its position, stream and version, and when it occurred.
    static func events(_ pool: PostgresConnectionPool, _ appID: UUID) async throws -> [(position: Int64, stream: String, version: Int64, occurred: Date)] {
        try await pool.query(
            "SELECT position, user_id || '/' || device_id, version, occurred_at FROM events WHERE app_id = \(appID)"
        ).map { row in
            let position: Int64 = try row.decode(0), stream: String = try row.decode(1)
            let version: Int64 = try row.decode(2), occurred: Date = try row.decode(3)
            return (position: position, stream: stream, version: version, occurred: occurred)
        }
    }

    /// Each stream's latest snapshot: its version and the latest occurredAt it covers.
    static func snapshots(_ pool: PostgresConnectionPool, _ appID: UUID) async throws -> [String: Archived] {
        var snapshots: [String: Archived] = [:]
        for row in try await pool.query(
            """
            SELECT DISTINCT ON (user_id, device_id) user_id || '/' || device_id, version, last_occurred_at
            FROM stream_snapshots WHERE app_id = \(appID) ORDER BY user_id, device_id, archive_id DESC
            """) {
            let stream: String = try row.decode(0)
            snapshots[stream] = Archived(version: try row.decode(1), lastOccurred: try row.decode(2))
        }
        return snapshots
    }

    /// What the snapshot must hold after archiving below `boundary`: each archived stream's
    /// highest version there and the latest occurredAt of all its archived events (earlier
    /// archives' included).
    static func expected(_ events: [(position: Int64, stream: String, version: Int64, occurred: Date)], below boundary: Int64) -> [String: Archived] {
        var expected: [String: Archived] = [:]
        for event in events where event.position < boundary {
            let current = expected[event.stream]
            expected[event.stream] = Archived(
                version: max(current?.version ?? 0, event.version),
                lastOccurred: max(current?.lastOccurred ?? event.occurred, event.occurred))
        }
        return expected
    }

    /// Streams with no event left in the log whose snapshot is not exactly their stored state
    /// (version, state, milestones).
    static func wholeStreamMismatches(_ pool: PostgresConnectionPool, _ appID: UUID) async throws -> (whole: Int64, mismatched: Int64) {
        let row = try #require(try await pool.query(
            """
            SELECT count(*), count(*) FILTER (WHERE s.version <> d.version OR k.state <> d.state OR s.milestones <> d.milestones)
            FROM (SELECT DISTINCT ON (user_id, device_id) * FROM stream_snapshots WHERE app_id = \(appID)
                  ORDER BY user_id, device_id, archive_id DESC) s
            JOIN device_state_kinds k USING (state_id)
            JOIN device_states d USING (app_id, user_id, device_id)
            WHERE NOT EXISTS (SELECT 1 FROM events e WHERE e.app_id = s.app_id AND e.user_id = s.user_id AND e.device_id = s.device_id)
            """).first)
        let whole: Int64 = try row.decode(0)
        let mismatched: Int64 = try row.decode(1)
        return (whole, mismatched)
    }

    static func same(_ snapshots: [String: Archived], _ expected: [String: Archived]) -> Bool {
        snapshots.count == expected.count && expected.allSatisfy { stream, want in
            guard let got = snapshots[stream] else { return false }
            return got.version == want.version && abs(got.lastOccurred.timeIntervalSince(want.lastOccurred)) < 0.001
        }
    }

    @Test("Two archives with pages of 3 and 2 events: every archived stream's snapshot has its last archived version and occurredAt, streams archived whole match their stored state, the rest replay to it, analytics unchanged, the file complete")
    func tinyPages() async throws {
        let pool = try await ArchiveTests.smallPartitions()
        let service = GateService(pool: pool, logger: TestDatabase.logger)
        let appID = try await TestDatabase.makeApp(pool)
        _ = try await service.catalog.putFeature(appID: appID, feature: Feature(key: "trip-log", requires: .always, services: [.visits]), actor: .cli)
        let simulator = PopulationSimulator(seed: 11)
        for start in stride(from: 0, to: 180, by: 30) {
            _ = try await service.events.ingest(appID: appID, submissions: (start..<(start + 30)).flatMap { simulator.device($0) })
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("locgate-archive-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let replay = Replay(pool: pool, appID: appID, logger: TestDatabase.logger)
        let prompts = AnalyticsQuery(kind: .prompts, appID: appID, groupBy: [.day, .platform])
        let archive = EventArchive(pool: pool, logger: TestDatabase.logger)

        for (round, pageSize) in [3, 2].enumerated() {
            if round == 1 {
                // Later events of 40 devices the first archive took (their new snapshot folds
                // the previous one with them), then new devices, which move the log past them.
                _ = try await service.events.ingest(appID: appID, submissions: (0..<40).map { index in
                    EventSubmission(
                        id: UUID(), userId: "user-\(index / 2)", deviceId: "device-\(index)", occurredAt: Date(),
                        event: .appStateChanged(.background, backgroundIndicator: false))
                })
                for start in stride(from: 180, to: 300, by: 30) {
                    _ = try await service.events.ingest(appID: appID, submissions: (start..<(start + 30)).flatMap { simulator.device($0) })
                }
            }
            let events = try await Self.events(pool, appID)
            let previous = try await Self.snapshots(pool, appID)
            let devices = try await ReplayTests.rows(pool, appID)
            let analytics = try AnalyticsRowsJSON.json(try await service.countedAnalytics(prompts))

            let report = try await archive.archive(before: Date().addingTimeInterval(86_400), into: directory, pageSize: pageSize)
            #expect(!report.partitions.isEmpty && report.events > 2 * pageSize, "\(report)")
            try ArchiveTests.checkFile(report)
            #expect(report.events == events.filter { $0.position < report.boundary }.count)

            // Each archived stream: its highest archived version, its latest archived occurredAt.
            var expected = Self.expected(events, below: report.boundary)
            let archivedNow = expected.count
            for (stream, earlier) in previous {
                if let now = expected[stream] {
                    expected[stream] = Archived(version: now.version, lastOccurred: max(now.lastOccurred, earlier.lastOccurred))
                } else {
                    expected[stream] = earlier
                }
            }
            #expect(report.devices == archivedNow && report.rejected == 0, "\(report.devices) of \(archivedNow)")
            let snapshots = try await Self.snapshots(pool, appID)
            #expect(Self.same(snapshots, expected), "a snapshot differs from what the archived events say")
            let snapshotRows = try #require(try await pool.query(
                "SELECT count(*), count(DISTINCT (user_id, device_id)) FROM stream_snapshots WHERE app_id = \(appID)").first)
            #expect(try snapshotRows.decode(0, as: Int64.self) == snapshotRows.decode(1, as: Int64.self), "superseded rows are left")

            // Streams archived whole hold their stored state exactly; the others replay to it.
            let whole = try await Self.wholeStreamMismatches(pool, appID)
            #expect(whole.whole > 0 && whole.mismatched == 0, "\(whole)")
            #expect(try await replay.verify().isEmpty)
            let rebuilt = try await replay.rebuild()
            #expect(rebuilt.rejected.isEmpty)
            #expect(try await ReplayTests.rows(pool, appID) == devices, "a rebuild from the boundary gives the same devices")
            #expect(try AnalyticsRowsJSON.json(try await service.countedAnalytics(prompts)) == analytics, "and the same analytics")
        }
        await pool.close()
    }
}
