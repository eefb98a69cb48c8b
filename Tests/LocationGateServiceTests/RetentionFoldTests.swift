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

        try await service.setRetentionDays(appID: appID, days: 1, actor: .cli)
        let report = try await service.runRetention(appID: appID, now: Date().addingTimeInterval(2 * 86_400))
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
}
