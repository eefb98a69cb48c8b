import EventLog
import Foundation
import LocationAuthorization
import LocationGateJSON
import LocationGateService
import LocationGateSimulation
import LocationGateTestSupport
import PostgresClient
import Testing

/// The counts kept beside the projection and the rollups (`device_counts`, `analytics_days`)
/// against the rows they summarize, after concurrent appends.
@Suite("Maintained counts: device_counts and analytics_days", .timeLimit(.minutes(3)))
struct MaintainedCountsTests {
    @Test("After concurrent appends, the status distribution, feature coverage and prompts by week equal the rows counted directly")
    func countsEqualRows() async throws {
        // A database of its own: the rollup's lock is per database, and the other tests' large
        // ingests and analytics in the shared one may hold it past a request's 2 s.
        let pool = try await TestDatabase.privatePool(prefix: "locgate_maintained_counts")
        let service = GateService(pool: pool, logger: TestDatabase.logger)
        let appID = try await TestDatabase.makeApp(pool)
        let features = [
            Feature(key: "trip-log", requires: .always, services: [.visits]),
            Feature(key: "nearby", requires: .whenInUse),
            Feature(key: "precise", requires: .whenInUse, accuracy: .full),
        ]
        for feature in features { _ = try await service.catalog.putFeature(appID: appID, feature: feature, actor: .cli) }
        let simulator = PopulationSimulator(seed: 5, observationsOnly: false, platform: .mixed)
        // Four writers at once, in several lanes; each device's events spread over several
        // appends of 5 events, so that appends move devices from one counted state to another.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for writer in 0..<4 {
                group.addTask {
                    for start in stride(from: writer * 10, to: 400, by: 40) {
                        let events = (start..<(start + 10)).flatMap { simulator.device($0) }
                        for chunk in stride(from: 0, to: events.count, by: 5) {
                            _ = try await service.events.ingest(appID: appID, submissions: Array(events[chunk..<min(chunk + 5, events.count)]))
                        }
                    }
                }
            }
            try await group.waitForAll()
        }

        // Statuses by platform, OS major and app version: device_states counted directly.
        let query = AnalyticsQuery(kind: .statuses, appID: appID, groupBy: [.platform, .osMajor, .appVersion])
        let statuses = try await service.countedAnalytics(query).map { row in
            row.map { "\($0.0)=\($0.1)" }.joined(separator: " ")
        }
        let direct = try await pool.query(
            """
            SELECT platform, os_major::text, app_version, status, count(*)::bigint,
                   count(*) FILTER (WHERE state->'blocked'->>'foreground' = 'true' OR state->'blocked'->>'background' = 'true')::bigint
            FROM device_states WHERE app_id = \(appID)
            GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4
            """
        ).map { row -> String in
            let os = Double(try row.decode(1) as String) ?? 0
            return "platform=\(JSONNode.string(try row.decode(0))) osMajor=\(JSONNode.number(os)) appVersion=\(JSONNode.string(try row.decode(2))) status=\(JSONNode.string(try row.decode(3))) count=\(JSONNode.number(Double(try row.decode(4) as Int64))) blocked=\(JSONNode.number(Double(try row.decode(5) as Int64)))"
        }
        #expect(statuses == direct)
        #expect(statuses.count > 5)

        // Feature coverage: every device decided on its own.
        let states = try await pool.query("SELECT state::text FROM device_states WHERE app_id = \(appID)")
            .map { try DeviceState.decoded(from: try $0.decode(0) as String) }
        #expect(states.count == 400)
        let coverage = try await service.analytics.featureCoverage(appID: appID)
        for feature in features {
            let decisions = states.map { $0.decide(feature, version: 1) }
            let covered = try #require(coverage.first { $0.feature.key == feature.key })
            #expect(covered.devices == 400)
            #expect(covered.enabled == Int64(decisions.filter(\.enabled).count), "\(feature.key)")
            var reasons: [GateReason: Int64] = [:]
            for decision in decisions where !decision.enabled { reasons[decision.reason, default: 0] += 1 }
            #expect(Dictionary(uniqueKeysWithValues: covered.reasons.map { ($0.0, $0.1) }) == reasons, "\(feature.key)")
        }

        // Prompts by week read analytics_days; the rollups summed by week give the same.
        let byWeek = try await service.countedAnalytics(AnalyticsQuery(kind: .prompts, appID: appID, groupBy: [.week]))
        let shownByWeek = Dictionary(byWeek.map { row in
            (Self.text(row, "week"), row.reduce(0.0) { $1.0 == "shown" ? $0 + (Self.number($1.1)) : $0 })
        }, uniquingKeysWith: +)
        let rollups = try await pool.query(
            """
            SELECT date_trunc('week', day)::date::text, sum(count)::bigint FROM analytics_rollups
            WHERE app_id = \(appID) AND metric = 'promptShown' GROUP BY 1
            """
        ).map { (try $0.decode(0) as String, Double(try $0.decode(1) as Int64)) }
        #expect(shownByWeek == Dictionary(uniqueKeysWithValues: rollups))
        #expect(!rollups.isEmpty)

        // A page's queries at once (the dashboard's overview) answer what each answers alone.
        let page = [query, AnalyticsQuery(kind: .prompts, appID: appID), AnalyticsQuery(kind: .prompts, appID: appID, groupBy: [.week])]
        let together = try await service.analytics.analytics(page).map(Self.lines)
        var alone: [[String]] = []
        for each in page { alone.append(Self.lines(try await service.analytics.analytics(each))) }
        #expect(together == alone)
        #expect(together.allSatisfy { !$0.isEmpty })
        // Queries of two apps are not one page.
        await #expect(throws: ServiceError.self) {
            _ = try await service.analytics.analytics([query, AnalyticsQuery(kind: .prompts, appID: UUID())])
        }

        #expect(try await Replay(pool: pool, appID: appID, logger: TestDatabase.logger).verify().isEmpty)
        await pool.close()
    }

    static func lines(_ rows: [AnalyticsQuery.Row]) -> [String] {
        rows.map { row in row.map { "\($0.0)=\($0.1)" }.joined(separator: " ") }
    }

    static func text(_ row: AnalyticsQuery.Row, _ field: String) -> String {
        if case .string(let text)? = row.first(where: { $0.0 == field })?.1 { return text }
        return ""
    }

    static func number(_ value: JSONNode) -> Double {
        if case .number(let number) = value { return number }
        return 0
    }
}

extension DeviceState {
    static func decoded(from text: String) throws -> DeviceState {
        try JSONDecoder().decode(DeviceState.self, from: Data(text.utf8))
    }
}
