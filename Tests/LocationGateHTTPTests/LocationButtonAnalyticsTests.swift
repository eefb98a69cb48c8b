import Foundation
import HTTPTypes
import LocationGateService
import LocationGateTestSupport
import Testing

/// SPEC §12's location button analytics through the API, against a real PostgreSQL:
/// `GET /v1/analytics/location-button` counts every path of B1-B4 exactly, grouped and filtered
/// as §6's other analytics, in JSON and CSV; the consent dialog's row of `prompts`; replay and
/// erasure keep the same figures.
@Suite("Analytics: Android 17's location button", .timeLimit(.minutes(3)))
struct LocationButtonAnalyticsTests {
    static func rows(_ reply: Reply) -> [[String: Any]] { reply.json["rows"] as? [[String: Any]] ?? [] }

    static let opened = ("locationButtonSession", #"{"state": "opened"}"#)
    static let closed = ("locationButtonSession", #"{"state": "closed"}"#)
    static let granted = ("locationButtonResult", #"{"granted": true}"#)
    static let refused = ("locationButtonResult", #"{"granted": false}"#)
    /// B6: the app leaves the foreground, an observation finds the one-time grant gone, the app
    /// comes back.
    static let lapse = [
        ("appStateChanged", #"{"state": "background", "foregroundService": false}"#),
        ("permissionsObserved", #"{"granted": []}"#),
        ("appStateChanged", #"{"state": "foreground", "foregroundService": false}"#),
    ]

    /// One Android device whose app declares the button (`locationButton` and `fine`): its context
    /// at 08:00 of `day`, then its steps a minute apart from 09:00.
    @discardableResult
    static func device(
        _ api: APIClient, _ key: String, _ id: String, user: String = "u-1", day: String, appVersion: String,
        apiLevel: Int = 37, targetSdk: Int = 37, _ steps: [(String, String)]
    ) async throws -> Reply {
        let context = #"{"platform": "android", "apiLevel": \#(apiLevel), "targetSdk": \#(targetSdk), "appVersion": "\#(appVersion)", "declaredPermissions": ["coarse", "fine", "locationButton"]}"#
        var events = [eventJSON("contextReported", context, user: user, device: id, at: "\(day)T08:00:00Z")]
        for (index, step) in steps.enumerated() {
            events.append(eventJSON(step.0, step.1, user: user, device: id, at: "\(day)T09:\(String(format: "%02d", index)):00Z"))
        }
        return try await api.append(key, events)
    }

    /// Every path of B1-B4 on API 37 devices; `person` owns the devices of the first day and the
    /// one that is refused twice, everyone else is `u-1`.
    static func populate(_ api: APIClient, _ key: String, person: String = "u-1") async throws {
        let failures: [(String, String)] = [
            ("locationButtonSession", #"{"state": "failed", "cause": "SecurityException"}"#), ("locationButtonSession", #"{"state": "failed"}"#),
        ]
        let twoConsents: [(String, String)] = [granted] + lapse + [granted] + lapse
        let steps: [(String, String, String, String, [(String, String)])] = [
            // 2026-11-21, app 5.0: a session, the consent dialog answered Allow (B3), closed.
            ("allow", person, "2026-11-21", "5.0", [opened, granted, closed]),
            // A session, then two failures: with a cause (closing it) and without (B1).
            ("failed", person, "2026-11-21", "5.0", [opened] + failures),
            // 2026-11-22, app 5.1: two consents, then a direct grant (B3).
            ("direct", "u-1", "2026-11-22", "5.1", twoConsents + [granted]),
            // Don't allow twice (B4: the second blocks precise), then a refusal while blocked.
            ("deny", person, "2026-11-22", "5.1", [refused, refused, refused]),
            // Two consents, then a refusal where a direct grant was due: notGrantable (B4).
            ("policy", "u-1", "2026-11-22", "5.1", twoConsents + [refused]),
            // A session, the dialog answered Allow, then a grant while precise is held (B2).
            ("already", "u-1", "2026-11-22", "5.1", [opened, granted, granted]),
        ]
        for (id, user, day, version, events) in steps {
            let reply = try await device(api, key, id, user: user, day: day, appVersion: version, events)
            #expect(reply.status == .ok, "\(id): \(reply.text)")
        }
        // An iPhone whose prompt counts in `prompts` and not here.
        let iPhone = try await api.append(key, [
            eventJSON("contextReported", #"{"platform": "iOS", "osVersion": "18.1", "appVersion": "5.1"}"#, device: "iphone", at: "2026-11-22T08:00:00Z"),
            eventJSON("authorizationRequested", #"{"request": "whenInUse"}"#, device: "iphone", at: "2026-11-22T09:00:00Z"),
            eventJSON("promptResponded", #"{"choice": "allowWhileUsing"}"#, device: "iphone", at: "2026-11-22T09:01:00Z"),
        ])
        #expect(iPhone.status == .ok, "\(iPhone.text)")
    }

    /// A row's figures, its group fields left out; a figure that is not a whole number is -1.
    static func figures(_ row: [String: Any]?, groupBy: [String] = []) -> [String: Int] {
        var figures: [String: Int] = [:]
        for (key, value) in row ?? [:] where !groupBy.contains(key) { figures[key] = value as? Int ?? -1 }
        return figures
    }

    static func expected(
        sessions: Int = 0, failures: Int = 0, results: Int = 0, prompted: Int = 0, direct: Int = 0, alreadyGranted: Int = 0,
        denied: Int = 0, blocked: Int = 0, notGrantable: Int = 0
    ) -> [String: Int] {
        [
            "sessions": sessions, "failures": failures, "results": results, "prompted": prompted, "direct": direct,
            "alreadyGranted": alreadyGranted, "denied": denied, "blocked": blocked, "notGrantable": notGrantable,
        ]
    }

    static let all = expected(sessions: 3, failures: 2, results: 12, prompted: 8, direct: 1, alreadyGranted: 1, denied: 2, blocked: 1, notGrantable: 1)
    static let firstDay = expected(sessions: 2, failures: 2, results: 1, prompted: 1)
    static let secondDay = expected(sessions: 1, results: 11, prompted: 7, direct: 1, alreadyGranted: 1, denied: 2, blocked: 1, notGrantable: 1)
    static let header = "sessions,failures,results,prompted,direct,alreadyGranted,denied,blocked,notGrantable"

    @Test("Every path counted exactly: sessions, failures, results by how they came about; grouped, filtered, as CSV; read scope")
    func counts() async throws {
        try await APIHarness.runWithService { api, service in
            let (appID, admin) = try await api.createApp()
            let key = try await api.createKey(admin, scope: "read")
            try await Self.populate(api, admin)

            // All time: one row, results the sum of the five ways a result comes about.
            let total = Self.rows(try await api.call(.get, "/v1/analytics/location-button", key: key))
            #expect(total.count == 1 && Self.figures(total.first) == Self.all, "\(total)")
            let sum = ["alreadyGranted", "prompted", "direct", "blocked", "notGrantable"].reduce(0) { $0 + (Self.all[$1] ?? 0) }
            #expect(sum == Self.all["results"])
            #expect(Self.figures(Self.rows(try await api.call(.get, "/v1/analytics/location-button?platform=android", key: key)).first) == Self.all)
            // Another platform: one row of zeros.
            let iOS = Self.rows(try await api.call(.get, "/v1/analytics/location-button?platform=iOS", key: key))
            #expect(iOS.count == 1 && Self.figures(iOS.first) == Self.expected(), "\(iOS)")

            // Grouped by day, by app version, by platform and API level: only groups with something.
            let days = Self.rows(try await api.call(.get, "/v1/analytics/location-button?groupBy=day", key: key))
            #expect(days.compactMap { $0["day"] as? String } == ["2026-11-21", "2026-11-22"], "\(days)")
            #expect(Self.figures(days.first, groupBy: ["day"]) == Self.firstDay && Self.figures(days.last, groupBy: ["day"]) == Self.secondDay)
            let versions = Self.rows(try await api.call(.get, "/v1/analytics/location-button?groupBy=appVersion", key: key))
            let byVersion = Dictionary(uniqueKeysWithValues: versions.map { ($0["appVersion"] as? String ?? "", Self.figures($0, groupBy: ["appVersion"])) })
            #expect(byVersion == ["5.0": Self.firstDay, "5.1": Self.secondDay], "\(versions)")
            let platforms = Self.rows(try await api.call(.get, "/v1/analytics/location-button?groupBy=platform,osMajor", key: key))
            #expect(platforms.count == 1 && platforms.first?["platform"] as? String == "android" && platforms.first?["osMajor"] as? Int == 37, "\(platforms)")
            #expect(Self.figures(platforms.first, groupBy: ["platform", "osMajor"]) == Self.all)
            let weeks = Self.rows(try await api.call(.get, "/v1/analytics/location-button?groupBy=week", key: key))
            #expect(weeks.count == 1 && weeks.first?["week"] as? String == "2026-11-16" && Self.figures(weeks.first, groupBy: ["week"]) == Self.all)

            // From and to, by UTC day of occurredAt.
            let from = Self.rows(try await api.call(.get, "/v1/analytics/location-button?from=2026-11-22", key: key))
            #expect(Self.figures(from.first) == Self.secondDay, "\(from)")
            let to = Self.rows(try await api.call(.get, "/v1/analytics/location-button?to=2026-11-21T23:59:59Z", key: key))
            #expect(Self.figures(to.first) == Self.firstDay, "\(to)")
            let both = Self.rows(try await api.call(.get, "/v1/analytics/location-button?from=2026-11-21&to=2026-11-22&groupBy=platform", key: key))
            #expect(Self.figures(both.first, groupBy: ["platform"]) == Self.all)
            let later = Self.rows(try await api.call(.get, "/v1/analytics/location-button?from=2026-11-23", key: key))
            #expect(later.count == 1 && Self.figures(later.first) == Self.expected(), "\(later)")
            let backwards = try await api.call(.get, "/v1/analytics/location-button?from=2026-11-23&to=2026-11-22", key: key)
            #expect(backwards.status == .unprocessableContent && backwards.errorCode == "validationFailed", "\(backwards.text)")
            #expect(try await api.call(.get, "/v1/analytics/location-button?groupBy=day,week", key: key).status == .badRequest)

            // CSV: a header row, one column per field, in the row's order.
            let csv = try await api.call(.get, "/v1/analytics/location-button?groupBy=day", key: key, headers: [.accept: "text/csv"])
            #expect(csv.status == .ok && csv.headers[.contentType]?.hasPrefix("text/csv") == true)
            #expect(csv.text == "day,\(Self.header)\n2026-11-21,2,2,1,1,0,0,0,0,0\n2026-11-22,1,0,11,7,1,1,2,1,1\n", "\(csv.text)")
            let plain = try await api.call(.get, "/v1/analytics/location-button", key: key, headers: [.accept: "text/csv"])
            #expect(plain.text == "\(Self.header)\n3,2,12,8,1,1,2,1,1\n", "\(plain.text)")
            let empty = try await api.call(.get, "/v1/analytics/location-button?groupBy=week&from=2027-01-01", key: key, headers: [.accept: "text/csv"])
            #expect(empty.text == "week,\(Self.header)\n", "\(empty.text)")

            // The consent dialog's row of prompts: shown and answered where B3/B4 inferred it; a grant is allow.
            let prompts = Self.rows(try await api.call(.get, "/v1/analytics/prompts?platform=android", key: key))
            #expect(prompts.count == 1, "only the button's dialog was shown on Android: \(prompts)")
            let dialog = try #require(prompts.first { $0["prompt"] as? String == "locationButton" })
            #expect(dialog["shown"] as? Int == 8 && dialog["answered"] as? Int == 8 && dialog["inferred"] as? Int == 8, "\(dialog)")
            #expect(dialog["sessionShown"] as? Int == 0)
            #expect(dialog["choices"] as? [String: Int] == ["allow": 6, "dontAllow": 2], "\(dialog)")
            #expect(dialog["grantRate"] as? Double == 0.75 && dialog["alwaysRate"] as? Double == 0, "\(dialog)")
            let promptsCSV = try await api.call(.get, "/v1/analytics/prompts?groupBy=platform", key: key, headers: [.accept: "text/csv"])
            #expect(promptsCSV.text.split(separator: "\n").contains(#"android,locationButton,8,0,8,8,"{""allow"":6,""dontAllow"":2}",0.75,0"#), "\(promptsCSV.text)")
            let everyPrompt = Self.rows(try await api.call(.get, "/v1/analytics/prompts", key: key))
            #expect(Set(everyPrompt.compactMap { $0["prompt"] as? String }) == ["whenInUse", "locationButton"], "\(everyPrompt)")

            // Escalation: a device holding location only through the button's one-time grant has
            // not reached When In Use (SPEC §12).
            let escalation = Self.rows(try await api.call(.get, "/v1/analytics/escalations?platform=android", key: key)).first
            #expect(escalation?["reachedWhenInUse"] as? Int == 0, "only the button's one-time grants: \(String(describing: escalation))")

            // Read and admin keys read it; an ingest key may not.
            #expect(try await api.call(.get, "/v1/analytics/location-button", key: admin).status == .ok)
            let ingest = try await api.createKey(admin, scope: "ingest")
            let forbidden = try await api.call(.get, "/v1/analytics/location-button", key: ingest)
            #expect(forbidden.status == .forbidden && forbidden.errorCode == "forbidden", "\(forbidden.text)")
            #expect(try await api.call(.get, "/v1/analytics/location-button").status == .unauthorized)
            #expect(try await api.call(.get, "/v1/analytics/locationButton", key: key).status == .notFound)

            // A device where the button is not available: 422, nothing counted.
            let old = try await Self.device(api, admin, "api36", day: "2026-11-22", appVersion: "5.1", apiLevel: 36, targetSdk: 36, [Self.opened, Self.granted])
            #expect(old.status == .unprocessableContent && old.errorCode == "ruleViolation", "\(old.text)")
            // A refusal from an app targeting below API 31 changes nothing (B4): a result, and
            // none of the five ways.
            let target30 = try await Self.device(api, admin, "target30", day: "2026-11-22", appVersion: "5.1", targetSdk: 30, [Self.refused])
            #expect(target30.status == .ok, "\(target30.text)")
            let effects = (target30.json["results"] as? [[String: Any]])?.last?["effects"] as? [[String: Any]] ?? []
            #expect(effects.first?["reason"] as? String == "unchanged", "\(effects)")
            var withOld = Self.all
            withOld["results"] = 13
            #expect(Self.figures(Self.rows(try await api.call(.get, "/v1/analytics/location-button", key: key)).first) == withOld)

            // A rebuild from the log counts the same.
            let differences = try await service.audit.replay(appID: UUID(uuidString: appID), logger: TestDatabase.logger).verify()
            #expect(differences.isEmpty, "\(differences.prefix(5))")

            // The dashboard's page draws the same funnel: each step's figure beside its label.
            let signedIn = try await DashboardSessionTests.signIn(api, key: key, origin: DashboardSessionTests.ownOrigin)
            let session = try #require(DashboardSessionTests.cookie(signedIn)).value
            let page = try await DashboardSessionTests.page(api, "/dashboard/location-button", session: session)
            #expect(page.status == .ok)
            #expect(page.text.contains("<svg") && page.text.contains("Location button"))
            for (step, figure) in withOld {
                #expect(page.text.contains(">\(step)</text>"), "\(step) in the chart")
                #expect(page.text.contains(">\(figure)</text>"), "\(step)'s \(figure) in the chart")
            }
        }
    }

    @Test("Erasing a person keeps the counts that name no one, and verify agrees")
    func erasure() async throws {
        try await APIHarness.runWithService(privateDatabase: "button_erasure") { api, service in
            let (appID, admin) = try await api.createApp()
            let person = ErasureTests.personID()
            try await Self.populate(api, admin, person: person)
            let before = try await api.call(.get, "/v1/analytics/location-button?groupBy=day", key: admin).text
            #expect(before.contains("2026-11-21"), "\(before)")
            let promptsBefore = try await api.call(.get, "/v1/analytics/prompts?groupBy=week", key: admin).text

            let accepted = try await api.call(.delete, "/v1/users/\(person)", key: admin)
            #expect(accepted.status == .accepted, "\(accepted.text)")
            let id = try #require(accepted.json["id"] as? String)
            let record = try await ErasureTests.waitDone(api, service, admin, id)
            #expect(record["devices"] as? Int == 3, "\(record)")
            #expect(try await api.call(.get, "/v1/users/\(person)/devices/deny/state", key: admin).json["version"] as? Int == 0)

            #expect(try await api.call(.get, "/v1/analytics/location-button?groupBy=day", key: admin).text == before)
            #expect(Self.figures(Self.rows(try await api.call(.get, "/v1/analytics/location-button", key: admin)).first) == Self.all)
            #expect(try await api.call(.get, "/v1/analytics/prompts?groupBy=week", key: admin).text == promptsBefore)
            let differences = try await service.audit.replay(appID: UUID(uuidString: appID), logger: TestDatabase.logger).verify()
            #expect(differences.isEmpty, "\(differences.prefix(5))")
        }
    }
}
