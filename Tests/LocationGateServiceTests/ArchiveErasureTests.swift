import Crypto
import EventLog
import Foundation
import LocationAuthorization
import LocationGateService
import LocationGateSimulation
import LocationGateTestSupport
import PostgresClient
import Testing

/// Archives forget with the database (SPEC §13): files written before an erasure yield nothing
/// of the person when read back, and `locgate archive upgrade` rewrites plain files of earlier
/// releases without the people erased since. On a database of its own (partitions of 600).
@Suite("Archives and erasure: sealed files, crypto-shredding, the upgrade of plain files", .timeLimit(.minutes(3)))
struct ArchiveErasureTests {
    @Test("An archive written before an erasure: read back, it yields every other event unchanged and none of the person's; a plain archive of an earlier release, upgraded after the erasure, drops the person too; replay and verify stay clean")
    func archiveEraseRead() async throws {
        let pool = try await ArchiveTests.smallPartitions()
        let service = GateService(pool: pool, logger: TestDatabase.logger)
        let appID = try await TestDatabase.makeApp(pool)
        let simulator = PopulationSimulator(seed: 11)
        // A person with a long random id and three devices, among 150 others.
        let person = "person-\(UUID().uuidString.lowercased())-\(UUID().uuidString.lowercased())"
        let personEvents = (0..<3).flatMap { index in
            simulator.device(1000 + index).map { submission in
                var submission = submission
                submission.userId = person
                submission.deviceId = "phone-\(index)-\(person.suffix(12))"
                return submission
            }
        }
        _ = try await service.events.ingest(appID: appID, submissions: personEvents)
        for start in stride(from: 0, to: 150, by: 30) {
            _ = try await service.events.ingest(appID: appID, submissions: (start..<(start + 30)).flatMap { simulator.device($0) })
        }
        // One more event after the archive's partitions, so that the log keeps a partition.
        _ = try await service.events.ingest(appID: appID, submissions: [EventSubmission(
            id: UUID(), userId: "user-0", deviceId: "device-0", occurredAt: Date(),
            event: .appStateChanged(.background, backgroundIndicator: false))])

        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("locgate-archive-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let report = try await EventArchive(pool: pool, logger: TestDatabase.logger)
            .archive(before: Date().addingTimeInterval(86_400), into: directory)
        let file = try #require(report.file)
        #expect(report.events > personEvents.count)

        // The file itself names nobody: user, device and event ids are sealed.
        let sealedText = try String(contentsOfFile: file, encoding: .utf8)
        #expect(!sealedText.contains(person) && !sealedText.contains("user-1") && !sealedText.contains("device-1"))
        #expect(!sealedText.contains(personEvents[0].id.uuidString.lowercased()))

        // Read back before the erasure: every archived event, the person's included.
        let files = ArchiveFiles(pool: pool, logger: TestDatabase.logger)
        let before = try await files.read(file: file, into: directory + "/before.csv")
        #expect(before.format == 2 && before.events == report.events && before.shredded == 0)
        let beforeLines = try Self.lines(directory + "/before.csv")
        let personLines = beforeLines.filter { $0.contains(person) }
        #expect(personLines.count == personEvents.count, "every event of the person was in the archived partitions")
        #expect(try Self.eventIDs(beforeLines).isSuperset(of: personEvents.map(\.id)))

        // A plain file, as earlier releases wrote: the same events, unsealed.
        let plain = directory + "/plain.csv"
        try FileManager.default.copyItem(atPath: directory + "/before.csv", toPath: plain)

        // The erasure.
        let erasure = try await service.erasure.requestErasure(appID: appID, userID: person, actor: .cli)
        #expect(try await service.erasure.performNextErasure())
        try await service.erasure.completeErasures()
        #expect(try await service.erasure.erasure(appID: appID, id: erasure.id)?.status == "done")
        #expect(try await pool.query("SELECT count(*) FROM archive_keys WHERE user_id = \(person)").first?.decode(0, as: Int64.self) == 0)

        // Read back after it: the person's lines are ciphertext without a key.
        let after = try await files.read(file: file, into: directory + "/after.csv")
        #expect(after.shredded == personEvents.count && after.events == report.events - personEvents.count)
        let afterLines = try Self.lines(directory + "/after.csv")
        #expect(!afterLines.contains { $0.contains(person) })
        #expect(Set(afterLines) == Set(beforeLines).subtracting(personLines), "every other event reads back unchanged")
        #expect(try await Replay(pool: pool, appID: appID, logger: TestDatabase.logger).verify().isEmpty)

        // The plain file recorded as the archive (format 1), then upgraded: the person goes.
        let plainDigest = try Self.sha256(plain)
        try await pool.query(
            "UPDATE event_archives SET file = \(plain), format = 1, sha256 = \(plainDigest) WHERE id = (SELECT max(id) FROM event_archives)")
        let upgraded = try await files.upgrade(file: nil)
        #expect(upgraded.count == 1 && upgraded.first?.recorded == true)
        #expect(upgraded.first?.dropped == personEvents.count && upgraded.first?.events == report.events - personEvents.count)
        let upgradedText = try String(contentsOfFile: plain, encoding: .utf8)
        #expect(upgradedText.hasPrefix("position,tx_id,app_id,recorded_at,key_id,sealed\n") && !upgradedText.contains(person))
        let mode = try FileManager.default.attributesOfItem(atPath: plain)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        let record = try await pool.query("SELECT format, sha256 FROM event_archives WHERE file = \(plain)").first
        #expect(try record?.decode(0, as: Int64.self) == 2 && record?.decode(1, as: String.self) == (try Self.sha256(plain)))
        let reread = try await files.read(file: plain, into: directory + "/reread.csv")
        #expect(reread.shredded == 0 && reread.events == report.events - personEvents.count)
        #expect(Set(try Self.lines(directory + "/reread.csv")) == Set(afterLines))
        // Upgraded already: nothing left to upgrade.
        #expect(try await files.upgrade(file: nil).isEmpty)
        await pool.close()
    }

    @Test("An erasure waits while an archive holds the archive lock, and is performed once it is released")
    func erasureWaitsForArchive() async throws {
        let pool = try await TestDatabase.privatePool(prefix: "locgate_archive_lock")
        let service = GateService(pool: pool, logger: TestDatabase.logger)
        let appID = try await TestDatabase.makeApp(pool)
        _ = try await service.events.ingest(appID: appID, submissions: PopulationSimulator(seed: 3).device(0))
        let erasure = try await service.erasure.requestErasure(appID: appID, userID: "user-0", actor: .cli)
        // The lock `locgate archive` holds for its whole run (EventArchive.runLockKey), held
        // on a connection of its own until the test releases it.
        let lockKey = Int64(0x6172_6368_6976_66)
        let locked = TestLatch()
        let release = TestLatch()
        let holder = Task {
            try await pool.withConnection { connection in
                try connection.query("SELECT pg_advisory_lock(\(lockKey))")
                locked.raise()
                release.block(atMost: .seconds(60))
                try connection.query("SELECT pg_advisory_unlock(\(lockKey))")
            }
        }
        #expect(try await waitUntil(timeout: .seconds(30)) { locked.isRaised })
        #expect(try await service.erasure.performNextErasure() == false, "no erasure while an archive runs")
        #expect(try await service.erasure.erasure(appID: appID, id: erasure.id)?.status == "pending")
        release.raise()
        try await holder.value
        #expect(try await service.erasure.performNextErasure())
        #expect(try await pool.query("SELECT count(*) FROM events WHERE user_id = 'user-0'").first?.decode(0, as: Int64.self) == 0)
        await pool.close()
    }

    static func lines(_ path: String) throws -> [String] {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        #expect(text.hasPrefix(EventLog.archiveHeader))
        return text.split(separator: "\n").dropFirst().map(String.init)
    }

    /// The event ids of plain lines (the seventh field; ids hold no comma or quote).
    static func eventIDs(_ lines: [String]) throws -> Set<UUID> {
        Set(lines.compactMap { line in
            let fields = line.split(separator: ",", omittingEmptySubsequences: false)
            return fields.count > 6 ? UUID(uuidString: String(fields[6])) : nil
        })
    }

    static func sha256(_ path: String) throws -> String {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        return SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined()
    }
}
