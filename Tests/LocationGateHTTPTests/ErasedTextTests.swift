import Foundation
import HTTPTypes
import LocationGateService
import LocationGateTestSupport
import PostgresClient
import Testing

/// SPEC §13: after an erasure, no row, table of distinct states or column statistic of
/// PostgreSQL keeps an `appVersion`, session key or purpose key that only the erased devices
/// reported. Checked in SQL over every table of the database and `pg_stats`, with statistics
/// gathered before and after the erasure, as autovacuum gathers them.
@Suite("Erasure: no client text of the person left in any table or statistic", .timeLimit(.minutes(3)))
struct ErasedTextTests {
    @Test("A person's own appVersion, session key and purpose key are in no table and no pg_stats entry after their erasure, ANALYZE before and after it included; their counts stay, under (erased)")
    func noClientTextLeft() async throws {
        try await APIHarness.runWithDatabase(privateDatabase: "erased_text") { api, service, pool in
            let (appID, admin) = try await api.createApp()
            let read = try await api.createKey(admin, scope: "read")
            let person = ErasureTests.personID()
            let tag = UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
            let version = "build-\(tag)"
            let session = "session-\(tag)"
            let purpose = "Purpose-\(tag)"
            // Two devices of the person on their own build, with a session and purpose keys of
            // their own, and someone else's device on a common one.
            var events: [String] = []
            for device in ["phone", "tablet"] {
                events += [
                    eventJSON("contextReported", #"{"platform": "iOS", "osVersion": "18.1", "appVersion": "\#(version)", "temporaryUsagePurposeKeys": ["\#(purpose)"]}"#,
                              user: person, device: device, at: "2026-11-22T08:00:00Z"),
                    eventJSON("serviceSessionChanged", #"{"session": "\#(session)", "action": "started", "requirement": "none", "fullAccuracyPurposeKey": "\#(purpose)"}"#,
                              user: person, device: device, at: "2026-11-22T08:01:00Z"),
                    eventJSON("authorizationRequested", #"{"request": "whenInUse"}"#, user: person, device: device, at: "2026-11-22T08:02:00Z"),
                    eventJSON("promptResponded", #"{"choice": "allowWhileUsing"}"#, user: person, device: device, at: "2026-11-22T08:03:00Z"),
                ]
            }
            events += ErasureTests.events("someone-else", "phone")
            let appended = try await api.append(admin, events)
            #expect(appended.status == .ok, "\(appended.text)")
            let prompts = try await api.call(.get, "/v1/analytics/prompts", key: read).text
            // The text is there before: in the states and their dictionary.
            for text in [version, session, purpose] {
                #expect(try await Self.rows(pool, holding: text, in: "device_state_kinds") > 0, "\(text) is not in the states")
            }
            // Statistics gathered while the person is there, as autovacuum would.
            try await pool.query("ANALYZE")

            let accepted = try await api.call(.delete, "/v1/users/\(person)", key: admin)
            _ = try await ErasureTests.waitDone(api, service, admin, try #require(accepted.json["id"] as? String))
            // And again after the erasure's deletions.
            try await pool.query("ANALYZE")

            let tables: [String] = try await pool.query(
                "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename"
            ).map { try $0.decode(0) }
            #expect(tables.contains("device_counts") && tables.contains("device_state_kinds") && tables.contains("events"))
            for text in [version, session, purpose] {
                for table in tables {
                    #expect(try await Self.rows(pool, holding: text, in: table) == 0, "\(table) holds \(text.prefix(12))...")
                }
                let statistics = try await pool.query(
                    "SELECT s.tablename || '.' || s.attname FROM pg_stats s WHERE strpos(s::text, \(text)) > 0"
                ).map { try $0.decode(0, as: String.self) }
                #expect(statistics.isEmpty, "pg_stats keeps \(text.prefix(12))... in \(statistics)")
            }
            // The counts that name no one stay; the version is folded.
            #expect(try await api.call(.get, "/v1/analytics/prompts", key: read).text == prompts)
            let byVersion = try await api.call(.get, "/v1/analytics/prompts?groupBy=appVersion", key: read).text
            #expect(byVersion.contains("(erased)") && !byVersion.contains(version), "\(byVersion)")
            let differences = try await service.audit.replay(appID: UUID(uuidString: appID), logger: TestDatabase.logger).verify()
            #expect(differences.isEmpty, "\(differences.prefix(5))")
        }
    }

    /// The rows of `table` whose text holds `text` anywhere.
    static func rows(_ pool: PostgresConnectionPool, holding text: String, in table: String) async throws -> Int64 {
        // A table name cannot be bound: these come from pg_tables or the test itself.
        let quoted = "\"" + table.replacingOccurrences(of: "\"", with: "\"\"") + "\""
        return try await pool.query(PostgresQuery(
            unsafeSQL: "SELECT count(*) FROM \(quoted) t WHERE strpos(t::text, $1) > 0", binds: [text.postgresBind])
        ).first?.decode(0, as: Int64.self) ?? -1
    }
}
