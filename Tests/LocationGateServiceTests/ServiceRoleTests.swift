import EventLog
import Foundation
import LocationAuthorization
import LocationGateService
import LocationGateSimulation
import LocationGateTestSupport
import PostgresClient
import Testing

/// What the servers do in the background, run with the privileges of the service role
/// (`locgate_service`) as deployed, not as the tables' owner the other tests connect as.
@Suite("The service role's privileges: erasure and retention", .timeLimit(.minutes(2)))
struct ServiceRoleTests {
    @Test("A server on the service role performs and completes an erasure, and runs retention (snapshots, counters, deletion through its function)")
    func erasureAndRetention() async throws {
        let owner = try await TestDatabase.create(prefix: "locgate_service_role")
        let ownerPool = PostgresConnectionPool(configuration: owner, size: 2, logger: TestDatabase.logger)
        let role = "locgate_app_test_\(UUID().uuidString.prefix(8).lowercased())"
        // A role name cannot be bound; this one is made of fixed text and hex digits.
        try await ownerPool.withConnection { try $0.execute("CREATE ROLE \(role) LOGIN IN ROLE locgate_service") }
        let servicePool = PostgresConnectionPool(configuration: owner.with("user", role), size: 4, logger: TestDatabase.logger)
        let service = GateService(pool: servicePool, logger: TestDatabase.logger)
        let appID = try await TestDatabase.makeApp(ownerPool)
        let simulator = PopulationSimulator(seed: 5)
        _ = try await service.events.ingest(appID: appID, submissions: (0..<20).flatMap { simulator.device($0) })
        func count(_ query: PostgresQuery) async throws -> Int64 {
            try await ownerPool.query(query).first?.decode(0, as: Int64.self) ?? -1
        }

        let erasure = try await service.erasure.requestErasure(appID: appID, userID: "user-3", actor: .cli)
        #expect(try await service.erasure.performNextErasure())
        #expect(try await service.erasure.completeErasures() == 1)
        #expect(try await service.erasure.erasure(appID: appID, id: erasure.id)?.status == "done")
        #expect(try await count("SELECT count(*) FROM events WHERE user_id = 'user-3'") == 0)

        try await service.retention.setRetentionDays(appID: appID, days: 1, actor: .cli)
        // Retention takes only events the analytics rollup has counted: count them first, as
        // a server's rollup would within a second.
        _ = try await AnalyticsRollup(pool: servicePool, logger: TestDatabase.logger).catchUp(waitForInFlightCommits: true, patience: .seconds(30))
        let remaining = try await count("SELECT count(*) FROM events WHERE app_id = \(appID)")
        let report = try await service.retention.runRetention(now: Date().addingTimeInterval(2 * 86_400))
        #expect(!report.skipped && report.events == Int(remaining), "\(report)")
        #expect(try await count("SELECT count(*) FROM events WHERE app_id = \(appID)") == 0)
        let devices = try await count("SELECT count(*) FROM device_states WHERE app_id = \(appID)")
        let snapshots = try await count("SELECT count(DISTINCT (user_id, device_id)) FROM stream_snapshots")
        #expect(devices > 0 && snapshots == devices, "every device kept has its snapshot")
        #expect(try await Replay(pool: ownerPool, appID: appID, logger: TestDatabase.logger).verify().isEmpty)
        await servicePool.close()
        await ownerPool.close()
    }
}
