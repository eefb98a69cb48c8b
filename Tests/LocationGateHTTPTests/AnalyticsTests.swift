import Foundation
import HTTPTypes
import Testing

@Suite("Analytics: exact counts and rates on a population built by hand", .timeLimit(.minutes(3)))
struct AnalyticsTests {
    static func populate(_ api: APIClient, _ key: String) async throws {
        func device(_ id: String, _ platform: String, _ os: String, day: String, _ steps: [(String, String)]) async throws {
            try await Self.device(api, key, id, platform, os, day: day, steps)
        }
        let whenInUse = ("authorizationRequested", #"{"request": "whenInUse"}"#)
        let always = ("authorizationRequested", #"{"request": "always"}"#)
        func answer(_ choice: String) -> (String, String) { ("promptResponded", #"{"choice": "\#(choice)"}"#) }
        try await device("A", "iOS", "17.4", day: "2026-11-22", [whenInUse, answer("allowWhileUsing"), always, answer("changeToAlwaysAllow")])
        try await device("B", "iOS", "17.4", day: "2026-11-22", [always, answer("allowOnce")])
        try await device("C", "macOS", "14.6", day: "2026-11-21", [whenInUse, answer("dontAllow")])
        try await device("D", "iOS", "17.4", day: "2026-11-22", [always, answer("allowWhileUsing"), ("alwaysEventOccurred", #"{"service": "visits"}"#), answer("changeToAlwaysAllow")])
        try await device("E", "iOS", "17.4", day: "2026-11-22", [whenInUse, answer("allowWhileUsing"),
            ("settingsChanged", #"{"authorization": "never"}"#), ("settingsChanged", #"{"authorization": "always"}"#)])
    }

    static func rows(_ reply: Reply) -> [[String: Any]] { reply.json["rows"] as? [[String: Any]] ?? [] }

    /// One device: its context at 08:00, then its steps a minute apart from 09:00.
    static func device(
        _ api: APIClient, _ key: String, _ id: String, _ platform: String, _ os: String, day: String, _ steps: [(String, String)]
    ) async throws {
        var events = [eventJSON("contextReported", #"{"platform": "\#(platform)", "osVersion": "\#(os)", "appVersion": "3.0"}"#, device: id, at: "\(day)T08:00:00Z")]
        for (index, step) in steps.enumerated() {
            events.append(eventJSON(step.0, step.1, device: id, at: "\(day)T09:\(String(format: "%02d", index)):00Z"))
        }
        let reply = try await api.append(key, events)
        #expect(reply.status == .ok, "\(reply.text)")
    }

    /// The same population reported as a real app reports it (O2): requests and the statuses
    /// the delegate then sees, never the button. D's second answer (Allow at alwaysSecond)
    /// changes nothing the app can see; F is observed notDetermined after its Allow While
    /// Using, which O2 corrects to Allow Once.
    static func populateObserved(_ api: APIClient, _ key: String) async throws {
        func device(_ id: String, _ platform: String, _ os: String, day: String, _ steps: [(String, String)]) async throws {
            try await Self.device(api, key, id, platform, os, day: day, steps)
        }
        let whenInUse = ("authorizationRequested", #"{"request": "whenInUse"}"#)
        let always = ("authorizationRequested", #"{"request": "always"}"#)
        func observed(_ status: String) -> (String, String) { ("statusObserved", #"{"status": "\#(status)"}"#) }
        try await device("A", "iOS", "17.4", day: "2026-11-22", [whenInUse, observed("authorizedWhenInUse"), always, observed("authorizedAlways")])
        try await device("B", "iOS", "17.4", day: "2026-11-22", [always, observed("authorizedWhenInUse")])
        try await device("C", "macOS", "14.6", day: "2026-11-21", [whenInUse, observed("denied")])
        try await device("D", "iOS", "17.4", day: "2026-11-22", [always, observed("authorizedAlways"), ("alwaysEventOccurred", #"{"service": "visits"}"#), observed("authorizedAlways")])
        try await device("E", "iOS", "17.4", day: "2026-11-22", [whenInUse, observed("authorizedWhenInUse"),
            ("settingsChanged", #"{"authorization": "never"}"#), ("settingsChanged", #"{"authorization": "always"}"#)])
        try await device("F", "iOS", "17.4", day: "2026-11-22", [whenInUse, observed("authorizedWhenInUse"),
            ("appStateChanged", #"{"state": "background"}"#), observed("notDetermined")])
    }

    @Test("Prompt outcomes of the observed-only twin: answers inferred (O2), the correction applied, the unobservable one unanswered")
    func observedTwin() async throws {
        try await APIHarness.run { api in
            let (_, key) = try await api.createApp()
            try await Self.populateObserved(api, key)
            let rows = Self.rows(try await api.call(.get, "/v1/analytics/prompts", key: key))
            let byPrompt = Dictionary(uniqueKeysWithValues: rows.map { ($0["prompt"] as? String ?? "", $0) })
            let whenInUse = try #require(byPrompt["whenInUse"])
            #expect(whenInUse["shown"] as? Int == 4 && whenInUse["answered"] as? Int == 4 && whenInUse["inferred"] as? Int == 4)
            #expect(whenInUse["choices"] as? [String: Int] == ["allowWhileUsing": 2, "allowOnce": 1, "dontAllow": 1], "\(whenInUse)")
            #expect(abs((whenInUse["grantRate"] as? Double ?? 0) - 3.0 / 4.0) < 1e-9)
            let first = try #require(byPrompt["alwaysFirst"])
            #expect(first["choices"] as? [String: Int] == ["allowOnce": 1, "allowWhileUsing": 1] && first["inferred"] as? Int == 2)
            #expect(first["grantRate"] as? Double == 1 && first["alwaysRate"] as? Double == 0.5)
            #expect(byPrompt["alwaysUpgrade"]?["alwaysRate"] as? Double == 1 && byPrompt["alwaysUpgrade"]?["inferred"] as? Int == 1)
            let second = try #require(byPrompt["alwaysSecond"])
            #expect(second["shown"] as? Int == 1 && second["answered"] as? Int == 0 && second["grantRate"] is NSNull)
            // The history marks the inference and the correction.
            let history = try await api.call(.get, "/v1/users/u-1/devices/F/history", key: key)
            let kinds = (history.json["entries"] as? [[String: Any]] ?? []).flatMap { ($0["effects"] as? [[String: Any]] ?? []).compactMap { $0["kind"] as? String } }
            #expect(kinds.contains("answerInferred") && kinds.contains("answerCorrected"), "\(kinds)")
            // A rebuild counts the same.
            let escalations = Self.rows(try await api.call(.get, "/v1/analytics/escalations", key: key))
            #expect(escalations.first?["provisional"] as? Int == 1)
        }
    }

    @Test("Prompt outcomes: shown, answered, choices, grant and Always rates per prompt")
    func prompts() async throws {
        try await APIHarness.run { api in
            let (_, key) = try await api.createApp()
            try await Self.populate(api, key)
            let rows = Self.rows(try await api.call(.get, "/v1/analytics/prompts", key: key))
            let byPrompt = Dictionary(uniqueKeysWithValues: rows.map { ($0["prompt"] as? String ?? "", $0) })
            #expect(Set(byPrompt.keys) == ["whenInUse", "alwaysFirst", "alwaysUpgrade", "alwaysSecond"])
            let whenInUse = try #require(byPrompt["whenInUse"])
            #expect(whenInUse["shown"] as? Int == 3 && whenInUse["answered"] as? Int == 3)
            #expect(whenInUse["choices"] as? [String: Int] == ["allowWhileUsing": 2, "dontAllow": 1])
            #expect(abs((whenInUse["grantRate"] as? Double ?? 0) - 2.0 / 3.0) < 1e-9)
            #expect(whenInUse["alwaysRate"] as? Double == 0)
            let first = try #require(byPrompt["alwaysFirst"])
            #expect(first["choices"] as? [String: Int] == ["allowOnce": 1, "allowWhileUsing": 1])
            #expect(first["grantRate"] as? Double == 1 && first["alwaysRate"] as? Double == 0.5)
            #expect(byPrompt["alwaysUpgrade"]?["alwaysRate"] as? Double == 1)
            #expect(byPrompt["alwaysSecond"]?["shown"] as? Int == 1 && byPrompt["alwaysSecond"]?["grantRate"] as? Double == 1)

            let platforms = Self.rows(try await api.call(.get, "/v1/analytics/prompts?groupBy=platform", key: key))
            let mac = platforms.first { $0["platform"] as? String == "macOS" && $0["prompt"] as? String == "whenInUse" }
            #expect(mac?["answered"] as? Int == 1 && mac?["grantRate"] as? Double == 0)
            let days = Self.rows(try await api.call(.get, "/v1/analytics/prompts?groupBy=day,osMajor&from=2026-11-22", key: key))
            #expect(days.allSatisfy { $0["day"] as? String == "2026-11-22" && $0["osMajor"] as? Int == 17 })
            #expect(days.first { $0["prompt"] as? String == "whenInUse" }?["shown"] as? Int == 2)
            let weeks = Self.rows(try await api.call(.get, "/v1/analytics/prompts?groupBy=week", key: key))
            #expect(Set(weeks.compactMap { $0["week"] as? String }) == ["2026-11-16"])
            #expect(try await api.call(.get, "/v1/analytics/prompts?groupBy=day,week", key: key).status == .badRequest)
            #expect(try await api.call(.get, "/v1/analytics/prompts?groupBy=color", key: key).status == .badRequest)
            #expect(try await api.call(.get, "/v1/analytics/nothing", key: key).status == .notFound)
        }
    }

    @Test("Escalations, Settings changes and the status distribution")
    func escalationsSettingsStatuses() async throws {
        try await APIHarness.run { api in
            let (_, key) = try await api.createApp()
            try await Self.populate(api, key)
            let escalation = try #require(Self.rows(try await api.call(.get, "/v1/analytics/escalations", key: key)).first)
            #expect(escalation["reachedWhenInUse"] as? Int == 3)
            #expect(escalation["askedAlways"] as? Int == 1)
            #expect(escalation["permanentAlways"] as? Int == 3)
            #expect(escalation["provisional"] as? Int == 1)
            #expect(escalation["provisionalToPermanent"] as? Int == 1)
            #expect(escalation["effectiveAlways"] as? Int == 0, "no device holds a session")
            let settings = try #require(Self.rows(try await api.call(.get, "/v1/analytics/settings", key: key)).first)
            #expect(settings["upgrades"] as? Int == 1 && settings["downgrades"] as? Int == 1)
            let statuses = Self.rows(try await api.call(.get, "/v1/analytics/statuses", key: key))
            let counts = Dictionary(uniqueKeysWithValues: statuses.map { ($0["status"] as? String ?? "", $0["count"] as? Int ?? 0) })
            #expect(counts == ["authorizedAlways": 3, "authorizedWhenInUse": 1, "denied": 1])
            #expect(try await api.call(.get, "/v1/analytics/statuses?groupBy=day", key: key).status == .badRequest)
            let byPlatform = Self.rows(try await api.call(.get, "/v1/analytics/statuses?groupBy=platform", key: key))
            #expect(byPlatform.contains { $0["platform"] as? String == "macOS" && $0["status"] as? String == "denied" && $0["count"] as? Int == 1 })
        }
    }

    @Test("CSV: a header row and one column per field")
    func csv() async throws {
        try await APIHarness.run { api in
            let (_, key) = try await api.createApp()
            try await Self.populate(api, key)
            let reply = try await api.call(.get, "/v1/analytics/prompts?groupBy=platform", key: key, headers: [.accept: "text/csv"])
            #expect(reply.headers[.contentType]?.hasPrefix("text/csv") == true)
            let lines = reply.text.split(separator: "\n")
            #expect(lines.first == "platform,prompt,shown,sessionShown,answered,inferred,choices,grantRate,alwaysRate")
            #expect(lines.contains { $0.hasPrefix("macOS,whenInUse,1,0,1,0,\"{\"\"dontAllow\"\":1}\",0,0") }, "\(reply.text)")
            let settings = try await api.call(.get, "/v1/analytics/settings", key: key, headers: [.accept: "text/csv"])
            #expect(settings.text == "upgrades,downgrades\n1,1\n")
            // An ingest key may not read analytics.
            let ingest = try await api.createKey(key, scope: "ingest")
            #expect(try await api.call(.get, "/v1/analytics/settings", key: ingest).status == .forbidden)
        }
    }
}
