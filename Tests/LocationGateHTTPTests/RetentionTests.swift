import Foundation
import HTTPTypes
import LocationGateService
import LocationGateTestSupport
import PostgresClient
import Testing

/// SPEC §13's retention: the setting through the API, and runs against a real PostgreSQL that
/// erase what is older than the cut while devices keep their state and aggregates stay. Runs are
/// measured against a clock the test moves (days cannot pass in a test); the schedule itself
/// runs in a real `locgate serve`.
@Suite("Retention: per-app days, runs that keep states and aggregates", .timeLimit(.minutes(3)))
struct RetentionTests {
    @Test("GET answers null by default; PUT takes 1 to 36500 or null; anything else is a 422 naming days with nothing stored; only this app's admin key")
    func setting() async throws {
        try await APIHarness.runWithService(privateDatabase: "retention_api") { api, _ in
            let (appID, admin) = try await api.createApp()
            let read = try await api.createKey(admin, scope: "read")
            let path = "/v1/apps/\(appID)/retention"
            let initial = try await api.call(.get, path, key: admin)
            #expect(initial.status == .ok && initial.text == #"{"days":null,"lastRun":null}"#, "\(initial.text)")
            let set = try await api.call(.put, path, key: admin, json: #"{"days": 30}"#)
            #expect(set.status == .ok && set.json["days"] as? Int == 30, "\(set.text)")
            #expect(try await api.call(.get, path, key: admin).json["days"] as? Int == 30)
            for bad in [#"{"days": 0}"#, #"{"days": 36501}"#, #"{"days": -3}"#, #"{"days": 1.5}"#, #"{"days": "7"}"#,
                        #"{"days": true}"#, #"{}"#, #"{"day": 7}"#] {
                let reply = try await api.call(.put, path, key: admin, json: bad)
                #expect(reply.status == .unprocessableContent && reply.errorCode == "validationFailed", "\(bad): \(reply.text)")
                // A field the API does not define is named itself (`day`), the others name `days`.
                #expect(((reply.json["error"] as? [String: Any])?["message"] as? String)?.hasPrefix(bad.contains("\"day\"") ? "day:" : "days") == true, "\(reply.text)")
            }
            #expect(try await api.call(.put, path, key: admin, json: "{not json").status == .badRequest)
            #expect(try await api.call(.get, path, key: admin).json["days"] as? Int == 30, "a refused PUT stored nothing")
            #expect(try await api.call(.put, path, key: admin, json: #"{"days": 36500}"#).json["days"] as? Int == 36500)
            #expect(try await api.call(.put, path, key: admin, json: #"{"days": 1}"#).json["days"] as? Int == 1)
            // Another scope of this app: 403; another app, or an id that is no app: 404.
            #expect(try await api.call(.get, path, key: read).status == .forbidden)
            #expect(try await api.call(.put, path, key: read, json: #"{"days": 5}"#).status == .forbidden)
            let (otherApp, stranger) = try await api.createApp("stranger")
            #expect(try await api.call(.get, path, key: stranger).status == .notFound)
            #expect(try await api.call(.put, path, key: stranger, json: #"{"days": 5}"#).status == .notFound)
            #expect(try await api.call(.get, "/v1/apps/not-an-id/retention", key: admin).status == .notFound)
            #expect(try await api.call(.get, "/v1/apps/\(otherApp)/retention", key: admin).status == .notFound)
            #expect(try await api.call(.get, path, key: admin).json["days"] as? Int == 1)
            let cleared = try await api.call(.put, path, key: admin, json: #"{"days": null}"#)
            #expect(cleared.status == .ok && cleared.text == #"{"days":null}"#)
        }
    }

    /// Three events that make a device WhenInUse, on a day of its own.
    static func events(_ user: String, _ device: String, day: String) -> [String] {
        ErasureTests.events(user, device, day: day)
    }

    @Test("A run erases the events recorded before the cut as each device's prefix: states, analytics and gates unchanged, replay and verify clean, history and past states start at the snapshot; later events stay; an erasure afterwards still forgets the person")
    func runs() async throws {
        try await APIHarness.runWithDatabase(privateDatabase: "retention_runs") { api, service, pool in
            let (appID, admin) = try await api.createApp()
            let app = try #require(UUID(uuidString: appID))
            let read = try await api.createKey(admin, scope: "read")
            try await api.putFeature(admin, "nearby", #"{"requires": "whenInUse", "services": ["standard"]}"#)
            // Old events: three people, two devices each.
            var old: [String] = []
            for user in ["ann", "bob", "cy"] {
                old += Self.events(user, "phone", day: "2026-11-01") + Self.events(user, "tablet", day: "2026-11-01")
            }
            #expect(try await api.append(admin, old).status == .ok)
            let cut = Date()
            try await Self.waitPast(cut)
            // Later events of the same people (and a new one), recorded after the cut.
            let later = [
                eventJSON("statusObserved", #"{"status": "authorizedAlways"}"#, user: "ann", device: "phone", at: "2026-11-20T10:00:00Z"),
                eventJSON("statusObserved", #"{"status": "denied"}"#, user: "bob", device: "tablet", at: "2026-11-20T10:00:00Z"),
            ] + Self.events("dee", "phone", day: "2026-11-20")
            #expect(try await api.append(admin, later).status == .ok)

            let states = try await Self.states(api, read, ["ann", "bob", "cy", "dee"])
            let analytics = try await Self.analytics(api, read)
            #expect(try await Replay(pool: pool, appID: app, logger: TestDatabase.logger).verify().isEmpty)

            // No retention set: a run erases nothing.
            var report = try await service.retention.runRetention(now: cut.addingTimeInterval(86_400))
            #expect(report.events == 0)
            // One day, measured at the cut plus a day: everything recorded before the cut goes.
            #expect(try await api.call(.put, "/v1/apps/\(appID)/retention", key: admin, json: #"{"days": 1}"#).status == .ok)
            report = try await service.retention.runRetention(now: cut.addingTimeInterval(86_400))
            #expect(report.events == old.count && report.devices == 6 && !report.unfinished, "\(report)")
            #expect(try await Self.count(pool, "SELECT count(*) FROM events WHERE app_id = \(app)") == Int64(later.count))
            #expect(try await Self.count(pool, "SELECT count(*) FROM event_archives WHERE kind = 'retention' AND file IS NULL") >= 1)

            // Every device keeps its state, gates and figures; replay agrees.
            #expect(try await Self.states(api, read, ["ann", "bob", "cy", "dee"]) == states)
            #expect(try await Self.analytics(api, read) == analytics)
            let replay = Replay(pool: pool, appID: app, logger: TestDatabase.logger)
            #expect(try await replay.verify().isEmpty)
            #expect(try await replay.recompute().devices.count == 7)
            #expect(try await api.call(.get, "/v1/users/cy/devices/phone/gates/nearby", key: read).json["enabled"] as? Bool == true)

            // History starts at the snapshot: cy's phone has none left, ann's phone its last.
            let cyHistory = try await api.call(.get, "/v1/users/cy/devices/phone/history", key: read)
            #expect((cyHistory.json["entries"] as? [Any])?.isEmpty == true, "\(cyHistory.text)")
            let annHistory = try await api.call(.get, "/v1/users/ann/devices/phone/history", key: read)
            let entries = annHistory.json["entries"] as? [[String: Any]] ?? []
            #expect(entries.map { $0["version"] as? Int } == [4], "\(annHistory.text)")
            // The state at the snapshot's version is there; before it, 404.
            #expect(try await api.call(.get, "/v1/users/ann/devices/phone/state?version=3", key: read).json["version"] as? Int == 3)
            #expect(try await api.call(.get, "/v1/users/ann/devices/phone/state?version=2", key: read).status == .notFound)

            // A second run at the same time finds nothing more; the later events stay.
            #expect(try await service.retention.runRetention(now: cut.addingTimeInterval(86_400)).events == 0)
            #expect(try await Self.count(pool, "SELECT count(*) FROM events WHERE app_id = \(app)") == Int64(later.count))

            // An erasure after retention forgets the person's snapshots too.
            let accepted = try await api.call(.delete, "/v1/users/ann", key: admin)
            _ = try await ErasureTests.waitDone(api, service, admin, try #require(accepted.json["id"] as? String))
            #expect(try await Self.count(pool, "SELECT count(*) FROM stream_snapshots WHERE user_id = 'ann'") == 0)
            #expect(try await replay.verify().isEmpty)
            // Prompt figures still count ann's erased, retained-away prompts.
            #expect(try await Self.analyticsPrompts(api, read) == analytics.prompts)
        }
    }

    struct Figures: Equatable {
        var prompts: String
        var escalations: String
        var settings: String
    }

    static func analytics(_ api: APIClient, _ key: String) async throws -> Figures {
        Figures(
            prompts: try await analyticsPrompts(api, key),
            escalations: try await api.call(.get, "/v1/analytics/escalations", key: key).text,
            settings: try await api.call(.get, "/v1/analytics/settings", key: key).text)
    }

    static func analyticsPrompts(_ api: APIClient, _ key: String) async throws -> String {
        try await api.call(.get, "/v1/analytics/prompts", key: key).text
    }

    /// Each device's current state and gates, as the API shows them.
    static func states(_ api: APIClient, _ key: String, _ users: [String]) async throws -> [String] {
        var texts: [String] = []
        for user in users {
            for device in ["phone", "tablet"] {
                texts.append(try await api.call(.get, "/v1/users/\(user)/devices/\(device)/state", key: key).text)
                texts.append(try await api.call(.get, "/v1/users/\(user)/devices/\(device)/gates", key: key).text)
            }
        }
        return texts
    }

    static func count(_ pool: PostgresConnectionPool, _ query: PostgresQuery) async throws -> Int64 {
        try await pool.query(query).first?.decode(0, as: Int64.self) ?? -1
    }

    /// Waits until the database's clock is past `date` (recorded_at is the database's time).
    static func waitPast(_ date: Date) async throws {
        #expect(try await waitUntil(timeout: .seconds(5)) { Date() > date.addingTimeInterval(0.01) })
    }
}

/// The schedule in a real `locgate serve`: a run every interval, each with a log line and the
/// runs counter on `/metrics`.
@Suite("Retention's schedule in a server process", .timeLimit(.minutes(3)))
struct RetentionScheduleTests {
    @Test("With --retention-interval 1 the server runs retention every second, counts each run on /metrics and logs a line for it")
    func schedule() async throws {
        let configuration = try await TestDatabase.configuration()
        let url = try TestDatabase.serverConfiguration().connectionString
        let name = configuration.overrides["dbname"] ?? ""
        let server = try LocgateServer(
            port: try #require(LocgateServer.freePort()), databaseURL: url, databaseName: name,
            arguments: ["--retention-interval", "1", "--log-level", "info"], captureErrors: true)
        #expect(await LocgateServer.waitReady(server.port))
        func runs() async throws -> Int {
            let text = try await LocgateServer.text(server.port, "/metrics")
            return text.split(separator: "\n").first { $0.hasPrefix("locgate_retention_runs_total") }
                .flatMap { $0.split(separator: " ").last }.flatMap { Int($0) } ?? 0
        }
        #expect(try await waitUntil(timeout: .seconds(20)) { try await runs() >= 2 }, "two runs counted on /metrics")
        server.stop()
        let log = server.errorOutput
        #expect(log.components(separatedBy: "retention run").count - 1 >= 2, "a log line per run")
    }
}
