import EventLog
import Foundation
import LocationAuthorization
import LocationGateService
import LocationGateSimulation
import LocationGateTestSupport
import PostgresClient
import Testing


@Suite("Replay: rebuild = inline projection = verify-clean", .timeLimit(.minutes(3)))
struct ReplayTests {
    @Test("Random populations, reported with choices or with observations only (O2): verify is clean, a rebuild changes nothing and counts the same analytics, a tampered row is found, diffed and repaired",
          arguments: [(UInt64(7), false), (1234, false), (99, true)])
    func rebuildEqualsInline(seed: UInt64, observationsOnly: Bool) async throws {
        // A database of its own: a rebuild holds the rollup's lock, which other tests'
        // analytics would wait for.
        let pool = try await TestDatabase.privatePool(prefix: "locgate_replay")
        let service = GateService(pool: pool, logger: TestDatabase.logger)
        let appID = try await TestDatabase.makeApp(pool)
        _ = try await service.catalog.putFeature(appID: appID, feature: Feature(key: "trip-log", requires: .always, services: [.visits]), actor: .cli)
        _ = try await service.catalog.putFeature(appID: appID, feature: Feature(key: "nearby", requires: .whenInUse), actor: .cli)
        let simulator = PopulationSimulator(seed: seed, observationsOnly: observationsOnly, platform: .mixed)
        var appended = 0
        for start in stride(from: 0, to: 300, by: 50) {
            let events = (start..<(start + 50)).flatMap { simulator.device($0) }
            appended += try await service.events.ingest(appID: appID, submissions: events).count
        }
        let replay = Replay(pool: pool, appID: appID, logger: TestDatabase.logger)
        #expect(try await replay.verify().isEmpty)

        let inline = try await Self.rows(pool, appID)
        let prompts = AnalyticsQuery(kind: .prompts, appID: appID, groupBy: [.day, .platform])
        let inlinePrompts = try AnalyticsRowsJSON.json(try await service.countedAnalytics(prompts))
        let rebuilt = try await replay.rebuild()
        #expect(rebuilt.events == appended && rebuilt.devices.count == 300 && rebuilt.rejected.isEmpty)
        #expect(try await Self.rows(pool, appID) == inline, "rebuild gives exactly the inline projection")
        #expect(try AnalyticsRowsJSON.json(try await service.countedAnalytics(prompts)) == inlinePrompts, "rebuilt rollups count the same")
        if observationsOnly {
            let rows = (try JSONSerialization.jsonObject(with: inlinePrompts) as? [String: Any])?["rows"] as? [[String: Any]] ?? []
            let inferred = rows.reduce(0) { $0 + ($1["inferred"] as? Int ?? 0) }
            let answered = rows.reduce(0) { $0 + ($1["answered"] as? Int ?? 0) }
            #expect(inferred > 50 && inferred == answered, "every answer of an observed population is inferred")
        }
        #expect(try await replay.verify().isEmpty)

        // Tamper with one device as a rule change would: the stored state says denied (of a
        // device that is not denied in the log).
        let target = try #require(try await pool.query(
            """
            SELECT user_id, device_id FROM device_states WHERE app_id = \(appID) AND status <> 'denied'
            ORDER BY user_id, device_id LIMIT 1
            """
        ).map { (try $0.decode(0, as: String.self), try $0.decode(1, as: String.self)) }.first)
        var tampered = DeviceState()
        tampered.authorization = .denied
        let text = String(decoding: try JSONEncoder().encode(tampered), as: UTF8.self)
        try await pool.query(
            """
            UPDATE device_states SET state = \(PostgresJSON(text)), status = 'denied'
            WHERE app_id = \(appID) AND user_id = \(target.0) AND device_id = \(target.1)
            """)
        let differences = try await replay.verify()
        // The device, and the maintained counts that no longer count device_states.
        #expect(differences.count == 2 && differences.first?.subject.hasSuffix("/\(target.0)/\(target.1)") == true)
        #expect(differences.last?.subject == "device_counts", "\(differences)")
        let diff = try await replay.diff()
        #expect(diff.devices == 300 && diff.devicesChanged == 1)
        #expect(diff.changes.keys.allSatisfy { $0.contains(": denied -> ") }, "\(diff.changes)")
        #expect(diff.samples.first?.contains("/\(target.0)/\(target.1)") == true)
        _ = try await replay.rebuild()
        #expect(try await replay.verify().isEmpty)

        // A count off by one alone is found, and a rebuild counts again.
        try await pool.query("UPDATE device_counts SET devices = devices + 1 WHERE app_id = \(appID) AND lane = 0 AND devices > 0")
        #expect(try await replay.verify().map(\.subject) == ["device_counts"])
        _ = try await replay.rebuild()
        #expect(try await replay.verify().isEmpty)
        await pool.close()
    }

    static func rows(_ pool: PostgresConnectionPool, _ appID: UUID) async throws -> [String] {
        try await pool.query(
            """
            SELECT user_id || '/' || device_id || ' v' || version || ' ' || state::text || ' ' || milestones
            FROM device_states WHERE app_id = \(appID) ORDER BY user_id, device_id
            """
        ).map { try $0.decode(0) }
    }
}
