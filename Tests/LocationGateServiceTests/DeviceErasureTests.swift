import EventLog
import Foundation
import LocationAuthorization
import LocationGateService
import LocationGateSimulation
import LocationGateTestSupport
import PostgresClient
import Testing

/// Erasing one device of a person (SPEC §13, "A device") takes the paths a person's erasure
/// takes: pages, appends racing it, the "(erased)" fold, and archives that forget (the device's
/// archive key goes, the person's other devices stay readable). Each test on a database of its
/// own, as `ErasurePagingTests`.
@Suite("Device erasure: pages, racing appends, the (erased) fold, archives", .timeLimit(.minutes(3)))
struct DeviceErasureServiceTests {
    @Test("A device of many pages is erased a page per step: no step erases more than a page, verify agrees between steps, appends of that device racing the erasure are erased with it, and the person's other devices and appends keep every event")
    func pages() async throws {
        let pool = try await TestDatabase.privatePool(prefix: "locgate_device_erasure_pages")
        let service = GateService(pool: pool, logger: TestDatabase.logger)
        service.erasure.erasureSettings.pageSize = 7
        let appID = try await TestDatabase.makeApp(pool)
        let person = ErasurePagingTests.personID()
        let big = "big-" + UUID().uuidString.lowercased()
        var submissions = ErasurePagingTests.device(person, big, count: 40)
        submissions += ErasurePagingTests.device(person, "small", count: 3)
        submissions += ErasurePagingTests.device("someone-else", big, count: 5)
        try await ErasurePagingTests.ingest(service, appID, submissions)

        let erasure = try await service.erasure.requestDeviceErasure(appID: appID, userID: person, deviceID: big, actor: .cli)
        var steps = 0
        var erased: Int64 = 0
        var record = try await ErasurePagingTests.record(service, appID, erasure.id)
        while record.status != "done" {
            #expect(try await service.erasure.performNextErasure())
            try await service.erasure.completeErasures()
            steps += 1
            record = try await ErasurePagingTests.record(service, appID, erasure.id)
            #expect(record.events - erased <= 7, "step \(steps) erased \(record.events - erased) events, more than a page of 7")
            erased = record.events
            if steps == 2 {
                #expect(try await ErasurePagingTests.count(pool, "SELECT count(*) FROM events WHERE user_id = \(person) AND device_id = \(big)") == 40 - 14)
                try await ErasurePagingTests.verify(pool, appID)
                // Appends of the person while it goes on: the erased device's are erased with
                // it, the other device's stay.
                let late = Date(timeIntervalSince1970: 1_793_100_000)
                let racing = [(big, true), (big, false), ("small", false), ("small", true)].enumerated().map { index, pair in
                    EventSubmission(
                        id: UUID(), userId: person, deviceId: pair.0, occurredAt: late.addingTimeInterval(Double(index)),
                        event: .locationServicesChanged(enabled: pair.1))
                }
                _ = try await service.events.ingest(appID: appID, submissions: racing)
            }
            try #require(steps < 100, "the erasure does not end")
        }
        #expect(steps >= 6, "42 events in pages of 7 take 6 steps at least, not \(steps)")
        #expect(record.events == 42 && record.devices == 1, "\(record)")

        for table in ["events", "streams", "device_states", "stream_snapshots", "archive_keys"] {
            let rows = try await ErasurePagingTests.count(
                pool, PostgresQuery(unsafeSQL: "SELECT count(*) FROM \(table) WHERE user_id = $1 AND device_id = $2",
                                    binds: [person.postgresBind, big.postgresBind]))
            #expect(rows == 0, "\(table) holds the erased device")
        }
        #expect(try await ErasurePagingTests.count(pool, "SELECT count(*) FROM event_archives WHERE kind = 'erasure'") == 0)
        #expect(try await ErasurePagingTests.count(pool, "SELECT count(*) FROM erasure_devices") == 0)
        #expect(try await ErasurePagingTests.count(pool, "SELECT count(*) FROM erasure_work") == 0)
        #expect(try await ErasurePagingTests.count(pool, "SELECT count(*) FROM events WHERE user_id = \(person) AND device_id = 'small'") == 5)
        #expect(try await ErasurePagingTests.count(pool, "SELECT count(*) FROM events WHERE user_id = 'someone-else'") == 5)
        try await ErasurePagingTests.verify(pool, appID)
        await pool.close()
    }

    @Test("An app version only the erased device reported is folded into \"(erased)\"; the person's other device keeps its version; the counts do not move")
    func erasedFold() async throws {
        let pool = try await TestDatabase.privatePool(prefix: "locgate_device_erasure_fold")
        let service = GateService(pool: pool, logger: TestDatabase.logger)
        let appID = try await TestDatabase.makeApp(pool)
        let person = ErasurePagingTests.personID()
        let own = "build-of-\(person.suffix(12))"
        try await ErasurePagingTests.ingest(
            service, appID,
            ErasurePagingTests.device(person, "d1", appVersion: own, count: 3)
                + ErasurePagingTests.device(person, "d2", appVersion: "kept-2.0", count: 3))
        #expect(try await ErasurePagingTests.answeredByVersion(service, appID) == [own: 1, "kept-2.0": 1])
        let erasure = try await service.erasure.requestDeviceErasure(appID: appID, userID: person, deviceID: "d1", actor: .cli)
        _ = try await ErasurePagingTests.stepsUntilDone(service, appID, erasure.id)
        #expect(try await ErasurePagingTests.answeredByVersion(service, appID) == ["(erased)": 1, "kept-2.0": 1])
        for table in ["analytics_rollups", "analytics_totals", "erasure_rollups", "archived_rollups"] {
            let rows = try await ErasurePagingTests.count(
                pool, PostgresQuery(unsafeSQL: "SELECT count(*) FROM \(table) WHERE app_version = $1", binds: [own.postgresBind]))
            #expect(rows == 0, "\(table) keeps the erased device's own version")
        }
        #expect(try await ErasurePagingTests.count(pool, "SELECT count(*) FROM events WHERE user_id = \(person) AND device_id = 'd2'") == 3)
        try await ErasurePagingTests.verify(pool, appID)
        await pool.close()
    }

    @Test("An archive written before a device's erasure: read back, it yields none of that device's lines and every other line, the person's other devices included; the archive holds one key per device")
    func archive() async throws {
        let pool = try await ArchiveTests.smallPartitions()
        let service = GateService(pool: pool, logger: TestDatabase.logger)
        let appID = try await TestDatabase.makeApp(pool)
        let simulator = PopulationSimulator(seed: 13)
        let person = ErasurePagingTests.personID()
        let devices = (0..<2).map { "phone-\($0)-\(UUID().uuidString.lowercased())" }
        let personEvents = devices.enumerated().flatMap { index, device in
            simulator.device(1000 + index).map { submission in
                var submission = submission
                submission.userId = person
                submission.deviceId = device
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
        #expect(try await ErasurePagingTests.count(pool, "SELECT count(*) FROM archive_keys WHERE user_id = \(person)") == 2)

        let files = ArchiveFiles(pool: pool, logger: TestDatabase.logger)
        let before = try await files.read(file: file, into: directory + "/before.csv")
        #expect(before.shredded == 0)
        let beforeLines = try ArchiveErasureTests.lines(directory + "/before.csv")
        let erasedLines = beforeLines.filter { $0.contains(devices[0]) }
        let keptLines = beforeLines.filter { $0.contains(devices[1]) }
        try #require(erasedLines.count + keptLines.count == personEvents.count, "every event of the person was archived")
        #expect(!erasedLines.isEmpty && !keptLines.isEmpty)

        let erasure = try await service.erasure.requestDeviceErasure(appID: appID, userID: person, deviceID: devices[0], actor: .cli)
        _ = try await ErasurePagingTests.stepsUntilDone(service, appID, erasure.id)
        let record = try await ErasurePagingTests.record(service, appID, erasure.id)
        #expect(record.devices == 1, "\(record)")
        #expect(try await ErasurePagingTests.count(pool, "SELECT count(*) FROM archive_keys WHERE user_id = \(person)") == 1)

        let after = try await files.read(file: file, into: directory + "/after.csv")
        #expect(after.shredded == erasedLines.count && after.events == report.events - erasedLines.count, "\(after)")
        let afterLines = try ArchiveErasureTests.lines(directory + "/after.csv")
        #expect(!afterLines.contains { $0.contains(devices[0]) })
        #expect(Set(afterLines) == Set(beforeLines).subtracting(erasedLines), "every other line reads back unchanged")
        #expect(Set(keptLines).isSubset(of: Set(afterLines)), "the person's other device stays readable")
        #expect(try await Replay(pool: pool, appID: appID, logger: TestDatabase.logger).verify().isEmpty)
        await pool.close()
    }
}
