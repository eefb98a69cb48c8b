import EventLog
import Foundation
import LocationAuthorization
import LocationGateService
import LocationGateTestSupport
import PostgresClient
import Testing

/// Retention folds app versions into "(erased)" as an erasure does (SPEC §13): a version only
/// erased events reported, which no device is in a state with now, can name a person.
@Suite("Retention's (erased) fold", .timeLimit(.minutes(3)))
struct RetentionFoldTests {
    @Test("A run folds the versions only its erased events reported and no device has now; a device's current version stays; the counts do not move; replay and verify agree")
    func fold() async throws {
        let pool = try await TestDatabase.privatePool(prefix: "locgate_retention_fold")
        let service = GateService(pool: pool, logger: TestDatabase.logger)
        let appID = try await TestDatabase.makeApp(pool)
        let person = ErasurePagingTests.personID()
        let own = "build-of-\(person.suffix(12))"
        // d1 answers a prompt under its own build, then moves to 2.0 (its state's version now);
        // d2 answers under 3.0 and stays there.
        var d1 = ErasurePagingTests.device(person, "d1", appVersion: own, count: 3)
        d1.append(
            EventSubmission(
                id: UUID(), userId: person, deviceId: "d1", occurredAt: Date(timeIntervalSince1970: 1_793_010_000),
                event: .contextReported(DeviceContext(platform: .iOS, osVersion: OSVersion(17, 4), appVersion: "2.0"))))
        try await ErasurePagingTests.ingest(
            service, appID, d1 + ErasurePagingTests.device("someone-else", "d2", appVersion: "3.0", count: 3))
        #expect(try await ErasurePagingTests.answeredByVersion(service, appID) == [own: 1, "3.0": 1])

        try await service.retention.setRetentionDays(appID: appID, days: 1, actor: .cli)
        let report = try await service.retention.runRetention(appID: appID, now: Date().addingTimeInterval(2 * 86_400))
        #expect(report.events == 7, "\(report)")

        #expect(try await ErasurePagingTests.answeredByVersion(service, appID) == ["(erased)": 1, "3.0": 1])
        for table in ["analytics_rollups", "analytics_totals", "archived_rollups"] {
            let rows = try await ErasurePagingTests.count(
                pool, PostgresQuery(unsafeSQL: "SELECT count(*) FROM \(table) WHERE app_version = $1", binds: [own.postgresBind]))
            #expect(rows == 0, "\(table) keeps the version only erased events reported")
        }
        let kept = try await ErasurePagingTests.count(
            pool, "SELECT count(*) FROM analytics_totals WHERE app_id = \(appID) AND app_version = '3.0'")
        #expect(kept > 0, "a version a device is in a state with now is kept")
        try await ErasurePagingTests.verify(pool, appID)
        await pool.close()
    }

    /// A person's device that answers a prompt under its own build and stays on it, and
    /// someone else's on 3.0; retention erases every event (the device keeps its build, so the
    /// version stays), then the device upgrades to 2.0. Returns the app, the person and the
    /// build.
    static func retainedThenUpgraded(_ service: GateService, _ pool: PostgresConnectionPool) async throws -> (UUID, String, String) {
        let appID = try await TestDatabase.makeApp(pool)
        let person = ErasurePagingTests.personID()
        let own = "build-of-\(person.suffix(12))"
        try await ErasurePagingTests.ingest(
            service, appID,
            ErasurePagingTests.device(person, "d1", appVersion: own, count: 3)
                + ErasurePagingTests.device("someone-else", "d2", appVersion: "3.0", count: 3))
        try await service.retention.setRetentionDays(appID: appID, days: 1, actor: .cli)
        let first = try await service.retention.runRetention(appID: appID, now: Date().addingTimeInterval(2 * 86_400))
        #expect(first.events == 6, "\(first)")
        #expect(try await ErasurePagingTests.answeredByVersion(service, appID) == [own: 1, "3.0": 1], "d1 is on its build still")
        // The upgrade, which the rollup has not counted yet.
        try await ErasurePagingTests.ingest(service, appID, [EventSubmission(
            id: UUID(), userId: person, deviceId: "d1", occurredAt: Date(timeIntervalSince1970: 1_793_050_000),
            event: .contextReported(DeviceContext(platform: .iOS, osVersion: OSVersion(17, 4), appVersion: "2.0")))])
        return (appID, person, own)
    }

    /// Rows of the counters and counts that keep `version`.
    static func rowsKeeping(_ pool: PostgresConnectionPool, _ version: String, tables: [String]) async throws -> [String: Int64] {
        var rows: [String: Int64] = [:]
        for table in tables {
            rows[table] = try await ErasurePagingTests.count(
                pool, PostgresQuery(unsafeSQL: "SELECT count(*) FROM \(table) WHERE app_version = $1", binds: [version.postgresBind]))
        }
        return rows
    }

    @Test("A version a device kept at one run is folded by a later run once the device has upgraded, though that run erases nothing")
    func keptVersionFoldedAfterUpgrade() async throws {
        let pool = try await TestDatabase.privatePool(prefix: "locgate_retention_upgrade")
        let service = GateService(pool: pool, logger: TestDatabase.logger)
        let (appID, _, own) = try await Self.retainedThenUpgraded(service, pool)
        // The next run's cut is a minute before the upgrade was recorded: it erases nothing.
        let second = try await service.retention.runRetention(appID: appID, now: Date().addingTimeInterval(86_400 - 60))
        #expect(second.events == 0, "\(second)")
        let last = try #require(try await service.retention.lastRetentionRun(appID: appID), "a run that erased nothing is the last run")
        #expect(last.events == 0 && last.devices == 0, "\(last)")
        #expect(try await ErasurePagingTests.answeredByVersion(service, appID) == ["(erased)": 1, "3.0": 1])
        let kept = try await Self.rowsKeeping(pool, own, tables: ["analytics_rollups", "analytics_totals", "archived_rollups"])
        #expect(kept.values.allSatisfy { $0 == 0 }, "\(kept)")
        try await ErasurePagingTests.verify(pool, appID)
        await pool.close()
    }

    @Test("Erasing that device afterwards folds the version only events retention erased reported, though the device's own events (not counted by the rollup yet) reported another; no count and no state keeps it")
    func deviceErasureFoldsRetainedVersion() async throws {
        let pool = try await TestDatabase.privatePool(prefix: "locgate_retention_device_erasure")
        let service = GateService(pool: pool, logger: TestDatabase.logger)
        let (appID, person, own) = try await Self.retainedThenUpgraded(service, pool)
        let erasure = try await service.erasure.requestDeviceErasure(appID: appID, userID: person, deviceID: "d1", actor: .cli)
        _ = try await ErasurePagingTests.stepsUntilDone(service, appID, erasure.id)
        #expect(try await ErasurePagingTests.answeredByVersion(service, appID) == ["(erased)": 1, "3.0": 1])
        let kept = try await Self.rowsKeeping(
            pool, own, tables: ["analytics_rollups", "analytics_totals", "archived_rollups", "erasure_rollups", "device_counts"])
        #expect(kept.values.allSatisfy { $0 == 0 }, "\(kept)")
        let states = try await ErasurePagingTests.count(
            pool, PostgresQuery(unsafeSQL: "SELECT count(*) FROM device_state_kinds WHERE strpos(state::text, $1) > 0", binds: [own.postgresBind]))
        #expect(states == 0, "the dictionary of states keeps the erased device's build")
        try await ErasurePagingTests.verify(pool, appID)
        await pool.close()
    }
}
