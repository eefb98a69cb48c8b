import Foundation
import HTTPTypes
import Testing

/// SPEC §11 through the API, against a real PostgreSQL: ingest and its refusals, the state's
/// sessions, history, modern features in the catalog, gates and OFREP, and V6's analytics.
@Suite("HTTP: iOS 18 service sessions and diagnostics", .timeLimit(.minutes(3)))
struct ServiceSessionAPITests {
    static func rows(_ reply: Reply) -> [[String: Any]] { reply.json["rows"] as? [[String: Any]] ?? [] }

    static let context = eventJSON("contextReported", #"{"platform": "iOS", "osVersion": "18.1", "appVersion": "4.0"}"#, at: "2026-11-22T08:00:00Z")

    @Test("Bad session input is a 422 naming the field, nothing of the batch is stored, other requests go on")
    func refusals() async throws {
        try await APIHarness.run { api in
            let (_, key) = try await api.createApp()
            let cases: [(String, String, String)] = [
                ("diagnosticObserved", #"{"source": "liveUpdates", "flags": ["alwaysAuthorizationDenied"]}"#, "data.flags"),
                ("diagnosticObserved", #"{"source": "monitor", "flags": ["unheardOf"]}"#, "data.flags"),
                ("diagnosticObserved", #"{"source": "serviceSession", "flags": []}"#, "data.session"),
                ("serviceSessionChanged", #"{"session": "nav/main", "action": "started", "requirement": "always"}"#, "data.session"),
                ("serviceSessionChanged", #"{"session": "\#(String(repeating: "s", count: 65))", "action": "started", "requirement": "none"}"#, "data.session"),
                ("serviceSessionChanged", #"{"session": "nav", "action": "started"}"#, "data.requirement"),
                ("serviceSessionChanged", #"{"session": "nav", "action": "started", "requirement": "none", "fullAccuracyPurposeKey": "a b"}"#, "data.fullAccuracyPurposeKey"),
            ]
            for (type, data, field) in cases {
                let reply = try await api.append(key, [Self.context, eventJSON(type, data)])
                #expect(reply.status == .unprocessableContent, "\(data): \(reply.text)")
                #expect(reply.errorCode == "validationFailed" && reply.errorIndex == 1, "\(reply.text)")
                let message = (reply.json["error"] as? [String: Any])?["message"] as? String ?? ""
                #expect(message.contains(field), "\(message) should name \(field)")
            }
            // tvOS has no Always, whatever the version: a rule violation.
            let tv = try await api.append(key, [
                eventJSON("contextReported", #"{"platform": "tvOS", "osVersion": "18.0"}"#, device: "tv"),
                eventJSON("serviceSessionChanged", #"{"session": "nav", "action": "started", "requirement": "always"}"#, device: "tv"),
            ])
            #expect(tv.status == .unprocessableContent && tv.errorCode == "ruleViolation", "\(tv.text)")
            // Nothing stored from any of them.
            for device in ["d-1", "tv"] {
                let state = try await api.call(.get, "/v1/users/u-1/devices/\(device)/state", key: key)
                #expect(state.json["version"] as? Int == 0, "\(state.text)")
            }
            // The next good request is served.
            let good = try await api.append(key, [Self.context, eventJSON("serviceSessionChanged", #"{"session": "nav", "action": "started", "requirement": "none"}"#)])
            #expect(good.status == .ok, "\(good.text)")
        }
    }

    @Test("Sessions in the state, history with sessionChanged, and state as of an earlier version")
    func stateAndHistory() async throws {
        try await APIHarness.run { api in
            let (_, key) = try await api.createApp()
            let reply = try await api.append(key, [
                Self.context,
                eventJSON("serviceSessionChanged", #"{"session": "nav", "action": "started", "requirement": "always", "fullAccuracyPurposeKey": "Nav"}"#),
                eventJSON("diagnosticObserved", #"{"source": "serviceSession", "session": "nav", "flags": ["authorizationRequestInProgress"]}"#),
                eventJSON("statusObserved", #"{"status": "authorizedWhenInUse"}"#),
                eventJSON("backgroundActivityChanged", #"{"active": true}"#),
            ])
            #expect(reply.status == .ok, "\(reply.text)")
            let results = reply.json["results"] as? [[String: Any]] ?? []
            let effects = results.map { ($0["effects"] as? [[String: Any]] ?? []).compactMap { $0["kind"] as? String } }
            #expect(effects[1] == ["sessionChanged", "promptShown"], "V2 asks When In Use: \(effects)")
            #expect(effects[3] == ["answerInferred", "reconciled", "promptShown"], "then the escalation: \(effects)")
            let state = try await api.call(.get, "/v1/users/u-1/devices/d-1/state", key: key)
            let body = try #require(state.json["state"] as? [String: Any])
            let sessions = try #require(body["sessions"] as? [String: [String: Any]])
            #expect(sessions["nav"]?["requirement"] as? String == "always" && sessions["nav"]?["active"] as? Bool == true)
            #expect(sessions["nav"]?["fullAccuracyPurposeKey"] as? String == "Nav" && sessions["nav"]?["resumable"] as? Bool == false)
            #expect(body["backgroundActivity"] as? Bool == true && body["backgroundActivityResumable"] as? Bool == false)
            #expect(body["monitorLimited"] as? Bool == false && body["pendingPrompt"] as? String == "alwaysUpgrade")
            let before = try await api.call(.get, "/v1/users/u-1/devices/d-1/state?version=1", key: key)
            let empty = (before.json["state"] as? [String: Any])?["sessions"] as? [String: Any]
            #expect(empty?.isEmpty == true, "\(before.text)")
            let history = try await api.call(.get, "/v1/users/u-1/devices/d-1/history", key: key)
            let entries = history.json["entries"] as? [[String: Any]] ?? []
            let session = (entries.dropFirst().first?["effects"] as? [[String: Any]])?.first
            #expect(session?["kind"] as? String == "sessionChanged" && session?["session"] as? String == "nav" && session?["active"] as? Bool == true)
        }
    }

    @Test("Modern features: catalog defaults, the session rows in gates, OFREP's metadata")
    func gates() async throws {
        try await APIHarness.run { api in
            let (_, key) = try await api.createApp()
            try await api.putFeature(key, "arrival", #"{"requires": "always", "services": ["regionMonitoring"], "delivery": "modern"}"#)
            try await api.putFeature(key, "nearby", #"{"requires": "whenInUse", "services": ["standard"]}"#)
            let bad = try await api.call(.put, "/v1/features/bad", key: key, json: #"{"requires": "always", "delivery": "carrierPigeon"}"#)
            #expect(bad.status == .unprocessableContent && bad.errorCode == "validationFailed")
            let arrival = try await api.call(.get, "/v1/features/arrival", key: key)
            #expect(arrival.json["delivery"] as? String == "modern" && arrival.json["background"] as? Bool == true)
            let nearby = try await api.call(.get, "/v1/features/nearby", key: key)
            #expect(nearby.json["delivery"] as? String == "locationManager" && nearby.json["background"] as? Bool == false)
            let granted = try await api.append(key, [
                Self.context,
                eventJSON("authorizationRequested", #"{"request": "whenInUse"}"#),
                eventJSON("promptResponded", #"{"choice": "allowWhileUsing"}"#),
                eventJSON("authorizationRequested", #"{"request": "always"}"#),
                eventJSON("promptResponded", #"{"choice": "changeToAlwaysAllow"}"#),
            ])
            #expect(granted.status == .ok, "\(granted.text)")
            let gate = try await api.call(.get, "/v1/users/u-1/devices/d-1/gates/arrival", key: key)
            #expect(gate.json["enabled"] as? Bool == false && gate.json["reason"] as? String == "alwaysSessionRequired")
            #expect(gate.json["action"] as? String == "startAlwaysSession")
            let ofrep = try await api.call(.post, "/ofrep/v1/evaluate/flags/arrival", key: key,
                                           json: #"{"context": {"targetingKey": "u-1", "deviceId": "d-1"}}"#)
            #expect(ofrep.json["value"] as? Bool == false)
            #expect((ofrep.json["metadata"] as? [String: Any])?["reason"] as? String == "alwaysSessionRequired", "\(ofrep.text)")
            let started = try await api.append(key, [eventJSON("serviceSessionChanged", #"{"session": "nav", "action": "started", "requirement": "always"}"#)])
            #expect(started.status == .ok)
            let after = try await api.call(.get, "/v1/users/u-1/devices/d-1/gates/arrival", key: key)
            #expect(after.json["enabled"] as? Bool == true, "\(after.text)")
            let limited = try await api.append(key, [eventJSON("diagnosticObserved", #"{"source": "monitor", "flags": ["conditionLimitExceeded"]}"#)])
            #expect(limited.status == .ok)
            let full = try await api.call(.get, "/v1/users/u-1/devices/d-1/gates/arrival", key: key)
            #expect(full.json["reason"] as? String == "monitorLimitExceeded" && full.json["action"] as? String == "none")
        }
    }

    @Test("V6: sessionShown counts the prompts sessions showed, effectiveAlways the devices Always is in force for")
    func analytics() async throws {
        try await APIHarness.run { api in
            let (_, key) = try await api.createApp()
            func session(_ requirement: String) -> String {
                #"{"session": "nav", "action": "started", "requirement": "\#(requirement)"}"#
            }
            // A: a session asks When In Use, then the escalation; both answered Allow.
            // B: a request asks When In Use; its session asks nothing (none); Always by request.
            // C: like A but its session goes at a relaunch without a re-take.
            let devices: [(String, [(String, String)])] = [
                ("A", [("serviceSessionChanged", session("always")), ("promptResponded", #"{"choice": "allowWhileUsing"}"#),
                       ("promptResponded", #"{"choice": "changeToAlwaysAllow"}"#)]),
                ("B", [("serviceSessionChanged", session("none")), ("authorizationRequested", #"{"request": "whenInUse"}"#),
                       ("promptResponded", #"{"choice": "allowWhileUsing"}"#), ("authorizationRequested", #"{"request": "always"}"#),
                       ("promptResponded", #"{"choice": "changeToAlwaysAllow"}"#)]),
                ("C", [("serviceSessionChanged", session("always")), ("promptResponded", #"{"choice": "allowWhileUsing"}"#),
                       ("promptResponded", #"{"choice": "changeToAlwaysAllow"}"#), ("appStateChanged", #"{"state": "terminated"}"#),
                       ("contextReported", #"{}"#), ("appStateChanged", #"{"state": "foreground"}"#)]),
            ]
            for (device, steps) in devices {
                var events = [eventJSON("contextReported", #"{"platform": "iOS", "osVersion": "18.1", "appVersion": "4.0"}"#, device: device, at: "2026-11-22T08:00:00Z")]
                for (index, step) in steps.enumerated() {
                    events.append(eventJSON(step.0, step.1, device: device, at: "2026-11-22T09:0\(index):00Z"))
                }
                let reply = try await api.append(key, events)
                #expect(reply.status == .ok, "\(reply.text)")
            }
            let prompts = Self.rows(try await api.call(.get, "/v1/analytics/prompts", key: key))
            let byPrompt = Dictionary(uniqueKeysWithValues: prompts.map { ($0["prompt"] as? String ?? "", $0) })
            #expect(byPrompt["whenInUse"]?["shown"] as? Int == 3 && byPrompt["whenInUse"]?["sessionShown"] as? Int == 2, "\(prompts)")
            #expect(byPrompt["alwaysUpgrade"]?["shown"] as? Int == 3 && byPrompt["alwaysUpgrade"]?["sessionShown"] as? Int == 2, "\(prompts)")
            let escalations = Self.rows(try await api.call(.get, "/v1/analytics/escalations", key: key))
            #expect(escalations.first?["permanentAlways"] as? Int == 3 && escalations.first?["effectiveAlways"] as? Int == 1, "\(escalations)")
            let byPlatform = Self.rows(try await api.call(.get, "/v1/analytics/escalations?groupBy=platform,osMajor", key: key))
            #expect(byPlatform.count == 1 && byPlatform.first?["effectiveAlways"] as? Int == 1 && byPlatform.first?["osMajor"] as? Int == 18, "\(byPlatform)")
            let byDay = Self.rows(try await api.call(.get, "/v1/analytics/escalations?groupBy=day", key: key))
            #expect(byDay.reduce(0) { $0 + ($1["effectiveAlways"] as? Int ?? 0) } == 1, "\(byDay)")
            var headers = HTTPFields()
            headers[.accept] = "text/csv"
            let csv = try await api.call(.get, "/v1/analytics/prompts", key: key, headers: headers)
            #expect(csv.text.split(separator: "\n").first?.contains("sessionShown") == true, "\(csv.text)")
        }
    }
}
