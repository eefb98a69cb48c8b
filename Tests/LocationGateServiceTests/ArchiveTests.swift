import Crypto
import EventLog
import Foundation
import LocationAuthorization
import LocationGateService
import LocationGateSimulation
import LocationGateTestSupport
import PostgresClient
import Testing

/// The partitioned log and `locgate archive` (migration 008), on a database of their own: an
/// archive drops partitions of every app.
@Suite("Partitioned log: appends across partitions, archive, replay and verify from the boundary", .timeLimit(.minutes(3)))
struct ArchiveTests {
    static let partitionSize = 600

    /// A database whose partitions hold `partitionSize` positions each, so that a few thousand
    /// events fill several.
    static func smallPartitions() async throws -> PostgresConnectionPool {
        let pool = try await TestDatabase.privatePool(prefix: "locgate_archive")
        try await pool.withConnection { connection in
            for partition in try EventLog.partitions(on: connection) {
                try connection.execute("DROP TABLE \(partition.name)")
            }
            try connection.execute("UPDATE event_partitioning SET rows_per_partition = \(partitionSize)")
            try EventLog.ensurePartitions(on: connection)
        }
        return pool
    }

    @Test("Appends fill several partitions (creating them when the log outruns them); a retry finds its event in an older partition; archive exports whole old partitions to a checksummed CSV and drops them; verify, rebuild and analytics agree before and after, twice")
    func archiveAndReplayFromTheBoundary() async throws {
        let pool = try await Self.smallPartitions()
        let service = GateService(pool: pool, logger: TestDatabase.logger)
        let appID = try await TestDatabase.makeApp(pool)
        _ = try await service.catalog.putFeature(appID: appID, feature: Feature(key: "trip-log", requires: .always, services: [.visits]), actor: .cli)
        let simulator = PopulationSimulator(seed: 42)
        var firstBatch: [EventSubmission] = []
        var appended = 0
        for start in stride(from: 0, to: 300, by: 30) {
            let events = (start..<(start + 30)).flatMap { simulator.device($0) }
            if start == 0 { firstBatch = events }
            appended += try await service.events.ingest(appID: appID, submissions: events).count
        }
        let partitions = try await pool.withConnection { try EventLog.partitions(on: $0) }
        let used = try await pool.query("SELECT count(DISTINCT tableoid) FROM events").first?.decode(0, as: Int64.self) ?? 0
        #expect(partitions.count >= 4 && used >= 3, "\(appended) events in \(used) of \(partitions.count) partitions")

        // The first batch went to the first partition; sent again, every event is a duplicate.
        let again = try await service.events.ingest(appID: appID, submissions: firstBatch)
        #expect(again.allSatisfy(\.duplicate) && again.count == firstBatch.count)
        #expect(try await Self.count(pool) == Int64(appended))
        // One more event of the first device, into the newest partition: after the archive its
        // stream starts in the snapshot and goes on in the log.
        let later = EventSubmission(
            id: UUID(), userId: "user-0", deviceId: "device-0", occurredAt: Date(),
            event: .appStateChanged(.background, backgroundIndicator: false))
        appended += try await service.events.ingest(appID: appID, submissions: [later]).count

        let replay = Replay(pool: pool, appID: appID, logger: TestDatabase.logger)
        #expect(try await replay.verify().isEmpty)
        let devices = try await ReplayTests.rows(pool, appID)
        let prompts = AnalyticsQuery(kind: .prompts, appID: appID, groupBy: [.day, .platform])
        let analytics = try AnalyticsRowsJSON.json(try await service.countedAnalytics(prompts))

        // Nothing is older than the year 2000.
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("locgate-archive-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let archive = EventArchive(pool: pool, logger: TestDatabase.logger)
        let none = try await archive.archive(before: Date(timeIntervalSince1970: 946_684_800), into: directory)
        #expect(none.partitions.isEmpty && none.events == 0 && none.file == nil)

        // Everything is older than tomorrow: every partition but the one appends write goes.
        let report = try await archive.archive(before: Date().addingTimeInterval(86_400), into: directory, pageSize: 250)
        let remaining = try await Self.count(pool)
        #expect(report.partitions.count >= 2 && report.events > 0)
        #expect(Int64(report.events) + remaining == Int64(appended), "every event is either archived or still in the log")
        #expect(try await pool.query("SELECT count(*) FROM events WHERE position < \(report.boundary)").first?.decode(0, as: Int64.self) == 0)
        try Self.checkFile(report)
        let recorded = try await pool.query("SELECT boundary, events, sha256, partitions::text FROM event_archives").map {
            (try $0.decode(0, as: Int64.self), try $0.decode(1, as: Int64.self), try $0.decode(2, as: String.self))
        }
        #expect(recorded.count == 1 && recorded.first?.0 == report.boundary && recorded.first?.1 == Int64(report.events)
            && recorded.first?.2 == report.sha256)

        // The projections are untouched, and a replay from the boundary agrees with them.
        #expect(try await replay.verify().isEmpty)
        let rebuilt = try await replay.rebuild()
        #expect(rebuilt.events == Int(remaining) && rebuilt.devices.count == 300 && rebuilt.rejected.isEmpty)
        #expect(try await ReplayTests.rows(pool, appID) == devices, "a rebuild from the boundary gives the same devices")
        #expect(try AnalyticsRowsJSON.json(try await service.countedAnalytics(prompts)) == analytics, "and counts the same analytics")

        // A device whose first events were archived and whose later ones are still in the log:
        // its state as of the boundary version is the snapshot's, earlier ones are archived,
        // the current one is the stored one, and its history starts after the boundary.
        let straddling = try #require(try await pool.query(
            """
            SELECT s.user_id, s.device_id, s.version, min(e.version), d.version, d.state::text, k.state::text
            FROM stream_snapshots s JOIN device_state_kinds k USING (state_id)
            JOIN events e USING (app_id, user_id, device_id)
            JOIN device_states d USING (app_id, user_id, device_id)
            WHERE s.user_id = 'user-0' AND s.device_id = 'device-0' GROUP BY 1, 2, 3, 5, 6, 7
            """).first)
        let key = StreamKey(appID: appID, userID: try straddling.decode(0), deviceID: try straddling.decode(1))
        let boundaryVersion: Int64 = try straddling.decode(2)
        let firstInLog: Int64 = try straddling.decode(3)
        let currentVersion: Int64 = try straddling.decode(4)
        let currentState = try Self.state(try straddling.decode(5))
        let snapshotState = try Self.state(try straddling.decode(6))
        #expect(firstInLog == boundaryVersion + 1, "the log holds the versions after the snapshot's")
        let atBoundary = try await service.audit.state(key, asOf: nil, version: boundaryVersion)
        #expect(atBoundary.version == boundaryVersion && atBoundary.state == snapshotState)
        await #expect(throws: ServiceError.self) { try await service.audit.state(key, asOf: nil, version: boundaryVersion - 1) }
        await #expect(throws: ServiceError.self) { try await service.audit.state(key, asOf: Date(timeIntervalSince1970: 0), version: nil) }
        let current = try await service.audit.state(key, asOf: nil, version: nil)
        #expect(current.version == currentVersion && current.state == currentState)
        let history = try await service.audit.history(key, afterVersion: 0, limit: 100)
        #expect(history.entries.first?.version == boundaryVersion + 1)

        // An archive that failed after writing its snapshot's rows: not recorded, so not read.
        try await pool.query(
            """
            INSERT INTO stream_snapshots (app_id, user_id, device_id, archive_id, version, state_id, milestones, last_occurred_at)
            SELECT app_id, user_id, device_id, 999, version + 100, state_id, 0, last_occurred_at FROM stream_snapshots LIMIT 5
            """)
        #expect(try await replay.verify().isEmpty, "rows of an unrecorded archive are not part of the snapshot")

        // More events, a second archive that starts from the first one's snapshot.
        for start in stride(from: 300, to: 420, by: 30) {
            appended += try await service.events.ingest(appID: appID, submissions: (start..<(start + 30)).flatMap { simulator.device($0) }).count
        }
        let second = try await archive.archive(before: Date().addingTimeInterval(86_400), into: directory)
        #expect(second.partitions.count >= 1 && second.boundary > report.boundary)
        try Self.checkFile(second)
        #expect(Int64(report.events + second.events) + (try await Self.count(pool)) == Int64(appended))
        #expect(try await replay.verify().isEmpty)
        // One snapshot row per stream: the unrecorded ones removed, the superseded ones too.
        let snapshotRows = try await pool.query(
            "SELECT count(*), count(DISTINCT (app_id, user_id, device_id)), max(archive_id) FROM stream_snapshots").first
        #expect(try snapshotRows?.decode(0, as: Int64.self) == snapshotRows?.decode(1, as: Int64.self))
        #expect(try snapshotRows?.decode(2, as: Int64.self) != 999)
        let secondDevices = try await ReplayTests.rows(pool, appID)
        #expect(try await replay.rebuild().devices.count == 420)
        #expect(try await ReplayTests.rows(pool, appID) == secondDevices)

        // The snapshot is what the replay starts from: spoil one, and verify finds that device.
        try await pool.query(
            """
            UPDATE stream_snapshots SET milestones = milestones # 1
            WHERE (app_id, user_id, device_id) = (SELECT app_id, user_id, device_id FROM stream_snapshots s
                WHERE NOT EXISTS (SELECT 1 FROM events e WHERE e.app_id = s.app_id AND e.user_id = s.user_id AND e.device_id = s.device_id)
                ORDER BY user_id LIMIT 1)
            """)
        let differences = try await replay.verify()
        #expect(differences.count == 1 && differences.first?.detail.contains("milestones") == true, "\(differences)")
        await pool.close()
    }

    @Test("The drop waits for events 2 s at a time and tries again: an archive completes although events was locked for longer than one wait")
    func dropTriesAgain() async throws {
        let pool = try await Self.smallPartitions()
        let service = GateService(pool: pool, logger: TestDatabase.logger)
        let appID = try await TestDatabase.makeApp(pool)
        let simulator = PopulationSimulator(seed: 7)
        for start in stride(from: 0, to: 150, by: 30) {
            _ = try await service.events.ingest(appID: appID, submissions: (start..<(start + 30)).flatMap { simulator.device($0) })
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("locgate-archive-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }

        // A reader holds events until the archive's DROP has asked for it and given up once.
        let locked = TestLatch()
        let holder = Task {
            try await pool.withConnection { connection -> Bool in
                try connection.transaction { connection -> Bool in
                    try connection.query("LOCK TABLE events IN ACCESS SHARE MODE")
                    locked.raise()
                    func dropWaiting() throws -> Bool {
                        try connection.query(
                            """
                            SELECT count(*) FROM pg_locks
                            WHERE relation = 'events'::regclass AND mode = 'AccessExclusiveLock' AND NOT granted
                            """).first?.decode(0, as: Int64.self) ?? 0 > 0
                    }
                    let deadline = Date().addingTimeInterval(60)
                    var sawWait = false
                    while Date() < deadline {
                        let waiting = try dropWaiting()
                        if waiting { sawWait = true } else if sawWait { return true }
                        Thread.sleep(forTimeInterval: 0.05)
                    }
                    return false
                }
            }
        }
        #expect(try await waitUntil(timeout: .seconds(30)) { locked.isRaised })
        let report = try await EventArchive(pool: pool, logger: TestDatabase.logger)
            .archive(before: Date().addingTimeInterval(86_400), into: directory)
        #expect(try await holder.value, "the drop never gave up a wait and tried again")
        #expect(!report.partitions.isEmpty && report.events > 0)
        try Self.checkFile(report)
        #expect(try await Replay(pool: pool, appID: appID, logger: TestDatabase.logger).verify().isEmpty)
        await pool.close()
    }

    static func state(_ text: String) throws -> DeviceState {
        try JSONDecoder().decode(DeviceState.self, from: Data(text.utf8))
    }

    static func count(_ pool: PostgresConnectionPool) async throws -> Int64 {
        try await pool.query("SELECT count(*) FROM events").first?.decode(0, as: Int64.self) ?? -1
    }

    /// The file holds the sealed header and one line per archived event, and its SHA-256 is the
    /// one reported (and recorded).
    static func checkFile(_ report: EventArchive.Report) throws {
        let path = try #require(report.file)
        // Every tenant's events: readable by the owner alone.
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(mode == 0o600, "mode \(String(mode ?? 0, radix: 8))")
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect(data.count == report.bytes)
        #expect(SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined() == report.sha256)
        let text = String(decoding: data, as: UTF8.self)
        #expect(text.hasPrefix("position,tx_id,app_id,recorded_at,key_id,sealed\n"))
        // Records start with a position and hold six fields, the last one sealed.
        let records = text.split(separator: "\n").dropFirst()
        #expect(records.count == report.events)
        #expect(records.allSatisfy { $0.first?.isNumber == true && $0.split(separator: ",").count == 6 })
    }
}
