import Foundation
import HTTPTypes
import LocationAuthorization
import LocationGateService
import LocationGateTestSupport
import PostgresClient
import Testing

/// SPEC §13's retention runs on demand: `GET /v1/apps/{appId}/retention` answers the app's last
/// run that erased events, and a dry run says what a run would erase without erasing or recording
/// anything. Runs are measured against a time the test chooses (days cannot pass in a test).
@Suite("Retention: lastRun, and dry runs that change nothing", .timeLimit(.minutes(3)))
struct RetentionLastRunTests {
    @Test("lastRun is null before the first run; a dry run reports what the run then erases and changes nothing; the run records {at, cut, events, devices}; a run that erases nothing records itself too, with events and devices 0")
    func lastRunAndDryRun() async throws {
        try await APIHarness.runWithDatabase(privateDatabase: "retention_last_run") { api, service, pool in
            let (appID, admin) = try await api.createApp()
            let app = try #require(UUID(uuidString: appID))
            let path = "/v1/apps/\(appID)/retention"
            // Old events: three people, two devices each.
            var old: [String] = []
            for user in ["ann", "bob", "cy"] {
                old += RetentionTests.events(user, "phone", day: "2026-11-01") + RetentionTests.events(user, "tablet", day: "2026-11-01")
            }
            #expect(try await api.append(admin, old).status == .ok)
            let cut = Date()
            try await RetentionTests.waitPast(cut)
            let later = [eventJSON("statusObserved", #"{"status": "authorizedAlways"}"#, user: "ann", device: "phone", at: "2026-11-20T10:00:00Z")]
                + RetentionTests.events("dee", "phone", day: "2026-11-20")
            #expect(try await api.append(admin, later).status == .ok)
            let now = cut.addingTimeInterval(86_400)

            // No retention set: nothing to preview, and no last run.
            #expect(try await service.retention.previewRetention(appID: app, now: now) == nil)
            #expect(try await api.call(.get, path, key: admin).text == #"{"days":null,"lastRun":null}"#)
            #expect(try await api.call(.put, path, key: admin, json: #"{"days": 1}"#).status == .ok)

            // The dry run: what the run will erase, and nothing changed.
            let all = try await RetentionTests.count(pool, "SELECT count(*) FROM events WHERE app_id = \(app)")
            let preview = try #require(try await service.retention.previewRetention(appID: app, now: now))
            #expect(preview.events == Int64(old.count) && preview.devices == 6, "\(preview)")
            let previewedCut = try #require(RFC3339.date(from: preview.cut))
            #expect(abs(previewedCut.timeIntervalSince(cut)) < 0.01, "\(preview.cut)")
            #expect(try await RetentionTests.count(pool, "SELECT count(*) FROM events WHERE app_id = \(app)") == all)
            #expect(try await RetentionTests.count(pool, "SELECT count(*) FROM event_archives WHERE kind = 'retention'") == 0)
            #expect(try await api.call(.get, path, key: admin).text == #"{"days":1,"lastRun":null}"#)

            // The run erases exactly that, and records it.
            let before = Date()
            let report = try await service.retention.runRetention(appID: app, now: now)
            #expect(report.events == old.count && !report.unfinished && !report.skipped, "\(report)")
            let shown = try await api.call(.get, path, key: admin)
            #expect(shown.status == .ok && shown.json["days"] as? Int == 1, "\(shown.text)")
            let lastRun = try #require(shown.json["lastRun"] as? [String: Any], "\(shown.text)")
            #expect(Set(lastRun.keys) == ["at", "cut", "events", "devices"])
            #expect(lastRun["cut"] as? String == preview.cut)
            #expect(lastRun["events"] as? Int == old.count && lastRun["devices"] as? Int == 6, "\(lastRun)")
            let at = try #require((lastRun["at"] as? String).flatMap(RFC3339.date(from:)))
            #expect(at >= before.addingTimeInterval(-1) && at <= Date().addingTimeInterval(1), "\(lastRun)")
            #expect(try await RetentionTests.count(pool, "SELECT count(*) FROM events WHERE app_id = \(app)") == Int64(later.count))

            // Nothing left before the cut: a dry run says so, and a run erasing nothing is the
            // last run now, with 0 (an operator sees that the schedule runs).
            let empty = try #require(try await service.retention.previewRetention(appID: app, now: now))
            #expect(empty.events == 0 && empty.devices == 0, "\(empty)")
            #expect(try await api.call(.get, path, key: admin).text == shown.text, "a dry run records nothing")
            let secondStart = Date()
            #expect(try await service.retention.runRetention(appID: app, now: now).events == 0)
            let again = try await api.call(.get, path, key: admin)
            let nothing = try #require(again.json["lastRun"] as? [String: Any], "\(again.text)")
            #expect(nothing["events"] as? Int == 0 && nothing["devices"] as? Int == 0, "\(again.text)")
            #expect(nothing["cut"] as? String == preview.cut, "\(again.text)")
            let secondAt = try #require((nothing["at"] as? String).flatMap(RFC3339.date(from:)))
            #expect(secondAt >= secondStart.addingTimeInterval(-1) && secondAt >= at, "\(again.text)")
            // Another app's key sees none of it.
            let (_, stranger) = try await api.createApp("stranger")
            #expect(try await api.call(.get, path, key: stranger).status == .notFound)
        }
    }

    @Test("The servers' scheduled run records each app's last run as a run of one app does; an app whose run erased nothing has one with events and devices 0")
    func scheduledRun() async throws {
        try await APIHarness.runWithDatabase(privateDatabase: "retention_last_run") { api, service, _ in
            let (first, firstAdmin) = try await api.createApp("first")
            let (second, secondAdmin) = try await api.createApp("second")
            #expect(try await api.append(firstAdmin, RetentionTests.events("ann", "phone", day: "2026-11-01")).status == .ok)
            let cut = Date()
            try await RetentionTests.waitPast(cut)
            for (app, admin) in [(first, firstAdmin), (second, secondAdmin)] {
                #expect(try await api.call(.put, "/v1/apps/\(app)/retention", key: admin, json: #"{"days": 1}"#).status == .ok)
            }
            // Counted by the rollup first, as a server's would have within a second.
            _ = try await api.call(.get, "/v1/analytics/prompts", key: firstAdmin)
            let report = try await service.retention.runRetention(now: cut.addingTimeInterval(86_400))
            #expect(report.events == 3, "\(report)")
            let shown = try await api.call(.get, "/v1/apps/\(first)/retention", key: firstAdmin).json
            let lastRun = shown["lastRun"] as? [String: Any]
            #expect(lastRun?["events"] as? Int == 3 && lastRun?["devices"] as? Int == 1, "\(shown)")
            let quiet = try await api.call(.get, "/v1/apps/\(second)/retention", key: secondAdmin).json
            let quietRun = quiet["lastRun"] as? [String: Any]
            #expect(quietRun?["events"] as? Int == 0 && quietRun?["devices"] as? Int == 0, "\(quiet)")
            #expect(quietRun?["cut"] as? String == lastRun?["cut"] as? String, "both apps keep a day, measured at the same time")
        }
    }

    @Test("locgate retention run --dry-run prints {cut, events, devices} and changes nothing; a run prints what it erased and is the last run, with 0 when it erased nothing; an app that keeps everything is refused")
    func command() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: LocgateServer.binary.path), "build locgate first: \(LocgateServer.binary.path)")
        try await APIHarness.runWithDatabase(privateDatabase: "retention_last_run") { api, service, pool in
            let (appID, admin) = try await api.createApp()
            let app = try #require(UUID(uuidString: appID))
            #expect(try await api.append(admin, RetentionTests.events("ann", "phone", day: "2026-11-01")).status == .ok)
            let arguments = ["retention", "run", "--app", appID]
            #expect(try LocgateCommandRun(arguments + ["--dry-run"], database: service.health.databaseName).status != 0, "no retention set")

            #expect(try await api.call(.put, "/v1/apps/\(appID)/retention", key: admin, json: #"{"days": 1}"#).status == .ok)
            // Recorded just now: a day's retention keeps every event.
            let dry = try LocgateCommandRun(arguments + ["--dry-run"], database: service.health.databaseName)
            #expect(dry.status == 0)
            let preview = (try? JSONSerialization.jsonObject(with: Data(dry.output.utf8))) as? [String: Any] ?? [:]
            #expect(Set(preview.keys) == ["cut", "events", "devices"], "\(dry.output)")
            #expect(preview["events"] as? Int == 0 && preview["devices"] as? Int == 0, "\(dry.output)")
            #expect((preview["cut"] as? String).flatMap(RFC3339.date(from:)) != nil, "\(dry.output)")

            let run = try LocgateCommandRun(arguments, database: service.health.databaseName)
            #expect(run.status == 0)
            let outcome = (try? JSONSerialization.jsonObject(with: Data(run.output.utf8))) as? [String: Any] ?? [:]
            #expect(outcome["events"] as? Int == 0 && outcome["unfinished"] as? Bool == false, "\(run.output)")
            #expect(try await RetentionTests.count(pool, "SELECT count(*) FROM events WHERE app_id = \(app)") == 3)
            let shown = try await api.call(.get, "/v1/apps/\(appID)/retention", key: admin).json
            let lastRun = shown["lastRun"] as? [String: Any]
            #expect(lastRun?["events"] as? Int == 0 && lastRun?["devices"] as? Int == 0, "\(shown)")
        }
    }
}
