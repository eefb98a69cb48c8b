import Foundation
import HTTPTypes
import Testing

/// SPEC §12 through the API, against a real PostgreSQL: Android's events and refusals, its
/// state, one catalog answering both platforms, and analytics per platform.
@Suite("HTTP: Android devices beside Apple ones", .timeLimit(.minutes(3)))
struct AndroidAPITests {
    static func rows(_ reply: Reply) -> [[String: Any]] { reply.json["rows"] as? [[String: Any]] ?? [] }

    static func android(_ device: String, api: Int = 34) -> String {
        eventJSON("contextReported", #"{"platform": "android", "apiLevel": \#(api), "targetSdk": \#(api), "appVersion": "5.0"}"#, device: device, at: "2026-11-22T08:00:00Z")
    }

    static func step(_ type: String, _ data: String, _ device: String, _ minute: Int) -> String {
        eventJSON(type, data, device: device, at: "2026-11-22T09:\(String(format: "%02d", minute)):00Z")
    }

    @Test("Apple types on Android and Android types on Apple are 422 naming type; the family is fixed; nothing is stored")
    func refusals() async throws {
        try await APIHarness.run { api in
            let (_, key) = try await api.createApp()
            let cases: [(String, String, String, String)] = [
                (Self.android("a"), "authorizationRequested", #"{"request": "whenInUse"}"#, "type"),
                (Self.android("a"), "serviceSessionChanged", #"{"session": "nav", "action": "started", "requirement": "none"}"#, "type"),
                (Self.android("a"), "settingsChanged", #"{"authorization": "askNextTime"}"#, "data.authorization"),
                (eventJSON("contextReported", #"{"platform": "iOS", "osVersion": "18.1"}"#, device: "i"), "permissionsRequested", #"{"permissions": ["coarse"]}"#, "type"),
                (eventJSON("contextReported", #"{"platform": "iOS", "osVersion": "18.1"}"#, device: "i"), "appStateChanged", #"{"state": "background", "foregroundService": true}"#, "data.foregroundService"),
            ]
            for (context, type, data, field) in cases {
                let device = context.contains(#""i""#) ? "i" : "a"
                let reply = try await api.append(key, [context, eventJSON(type, data, device: device)])
                #expect(reply.status == .unprocessableContent && reply.errorCode == "validationFailed" && reply.errorIndex == 1, "\(reply.text)")
                let message = (reply.json["error"] as? [String: Any])?["message"] as? String ?? ""
                #expect(message.hasPrefix(field), "\(message) should name \(field)")
            }
            let noLevel = try await api.append(key, [eventJSON("contextReported", #"{"platform": "android", "targetSdk": 34}"#, device: "n")])
            #expect(noLevel.status == .unprocessableContent && noLevel.errorCode == "validationFailed", "\(noLevel.text)")
            let noLevelMessage = (noLevel.json["error"] as? [String: Any])?["message"] as? String ?? ""
            #expect(noLevelMessage.hasPrefix("data.apiLevel"), "\(noLevelMessage)")
            let switched = try await api.append(key, [Self.android("s"), eventJSON("contextReported", #"{"platform": "iOS"}"#, device: "s")])
            #expect(switched.status == .unprocessableContent && switched.errorCode == "ruleViolation", "\(switched.text)")
            for device in ["a", "i", "n", "s"] {
                let state = try await api.call(.get, "/v1/users/u-1/devices/\(device)/state", key: key)
                #expect(state.json["version"] as? Int == 0, "\(device): \(state.text)")
            }
        }
    }

    @Test("One catalog answers for both platforms; Android's state, actions and OFREP")
    func oneCatalog() async throws {
        try await APIHarness.run { api in
            let (_, key) = try await api.createApp()
            try await api.putFeature(key, "trips", #"{"requires": "always", "services": ["standard"]}"#)
            try await api.putFeature(key, "nearby", #"{"requires": "whenInUse", "services": ["standard"], "accuracy": "full"}"#)
            let events = [
                Self.android("pixel"),
                Self.step("permissionsRequested", #"{"permissions": ["coarse", "fine"]}"#, "pixel", 0),
                Self.step("permissionsResult", #"{"granted": ["coarse"], "denied": ["fine"], "interrupted": false}"#, "pixel", 1),
                eventJSON("contextReported", #"{"platform": "iOS", "osVersion": "18.1"}"#, device: "iphone"),
                eventJSON("authorizationRequested", #"{"request": "whenInUse"}"#, device: "iphone"),
                eventJSON("promptResponded", #"{"choice": "allowWhileUsing"}"#, device: "iphone"),
            ]
            let reply = try await api.append(key, events)
            #expect(reply.status == .ok, "\(reply.text)")
            let effects = (reply.json["results"] as? [[String: Any]] ?? [])[2]["effects"] as? [[String: Any]] ?? []
            #expect(effects.first?["kind"] as? String == "answerInferred" && effects.first?["choice"] as? String == "approximateWhileUsing", "\(effects)")
            let state = try await api.call(.get, "/v1/users/u-1/devices/pixel/state", key: key)
            let body = try #require(state.json["state"] as? [String: Any])
            #expect(body["foreground"] as? String == "approximate" && body["background"] as? Bool == false && body["status"] as? String == "authorizedWhenInUse")
            #expect((body["denials"] as? [String: Any])?["foreground"] as? Int == 0 && (body["blocked"] as? [String: Any])?["background"] as? Bool == false)
            let gates = try await api.call(.get, "/v1/users/u-1/gates", key: key)
            let decisions = gates.json["decisions"] as? [[String: Any]] ?? []
            let trips = try #require(decisions.first { $0["feature"] as? String == "trips" })
            let devices = Dictionary(uniqueKeysWithValues: (trips["devices"] as? [[String: Any]] ?? []).map { ($0["deviceId"] as? String ?? "", $0) })
            #expect(devices["pixel"]?["reason"] as? String == "needsAlways" && devices["pixel"]?["action"] as? String == "openBackgroundSettings")
            #expect(devices["iphone"]?["reason"] as? String == "needsAlways" && devices["iphone"]?["action"] as? String == "requestAlways")
            let nearby = try await api.call(.get, "/v1/users/u-1/devices/pixel/gates/nearby", key: key)
            #expect(nearby.json["reason"] as? String == "reducedAccuracy" && nearby.json["action"] as? String == "requestPrecise")
            let ofrep = try await api.call(.post, "/ofrep/v1/evaluate/flags/trips", key: key, json: #"{"context": {"targetingKey": "u-1", "deviceId": "pixel"}}"#)
            #expect((ofrep.json["metadata"] as? [String: Any])?["action"] as? String == "openBackgroundSettings", "\(ofrep.text)")
        }
    }

    @Test("Analytics: Android's prompts, a platform filter, API levels as the OS major, blocked devices, Android Always as effective")
    func analytics() async throws {
        try await APIHarness.run { api in
            let (_, key) = try await api.createApp()
            let request = #"{"permissions": ["coarse", "fine"]}"#
            let deny = #"{"granted": [], "denied": ["coarse", "fine"], "interrupted": false}"#
            let events = [
                // blocked: two denials on API 34.
                Self.android("b"), Self.step("permissionsRequested", request, "b", 0), Self.step("permissionsResult", deny, "b", 1),
                Self.step("permissionsRequested", request, "b", 2), Self.step("permissionsResult", deny, "b", 3),
                Self.step("permissionsRequested", request, "b", 4),
                // Always through Settings on API 31.
                Self.android("g", api: 31), Self.step("permissionsRequested", request, "g", 0),
                Self.step("permissionsResult", #"{"granted": ["coarse", "fine"], "denied": [], "interrupted": false}"#, "g", 1),
                Self.step("permissionsRequested", #"{"permissions": ["background"]}"#, "g", 2),
                Self.step("permissionsResult", #"{"granted": ["background"], "denied": [], "interrupted": false}"#, "g", 3),
                // An iPhone for the filter.
                eventJSON("contextReported", #"{"platform": "iOS", "osVersion": "17.4"}"#, device: "i"),
                eventJSON("authorizationRequested", #"{"request": "whenInUse"}"#, device: "i"),
                eventJSON("promptResponded", #"{"choice": "dontAllow"}"#, device: "i"),
            ]
            let reply = try await api.append(key, events)
            #expect(reply.status == .ok, "\(reply.text)")
            let prompts = Self.rows(try await api.call(.get, "/v1/analytics/prompts?platform=android", key: key))
            let byPrompt = Dictionary(uniqueKeysWithValues: prompts.map { ($0["prompt"] as? String ?? "", $0) })
            #expect(byPrompt["foreground"]?["shown"] as? Int == 3 && byPrompt["foreground"]?["answered"] as? Int == 3, "\(prompts)")
            #expect(byPrompt["foreground"]?["choices"] as? [String: Int] == ["deny": 2, "preciseWhileUsing": 1])
            #expect(byPrompt["backgroundSettings"]?["alwaysRate"] as? Double == 1)
            #expect(byPrompt["whenInUse"] == nil, "the iPhone's prompt is filtered out")
            let all = Self.rows(try await api.call(.get, "/v1/analytics/prompts", key: key))
            #expect(all.contains { $0["prompt"] as? String == "whenInUse" })
            let statuses = Self.rows(try await api.call(.get, "/v1/analytics/statuses?groupBy=platform,osMajor", key: key))
            let blocked = statuses.first { $0["platform"] as? String == "android" && $0["status"] as? String == "denied" }
            #expect(blocked?["count"] as? Int == 1 && blocked?["blocked"] as? Int == 1 && blocked?["osMajor"] as? Int == 34, "\(statuses)")
            let escalations = Self.rows(try await api.call(.get, "/v1/analytics/escalations?platform=android", key: key))
            #expect(escalations.first?["effectiveAlways"] as? Int == 1 && escalations.first?["askedAlways"] as? Int == 1, "\(escalations)")
            let bad = try await api.call(.get, "/v1/analytics/prompts?platform=symbian", key: key)
            #expect(bad.status == .badRequest && bad.errorCode == "invalidRequest")
        }
    }

    @Test("Dismissals, Settings revocations, precise blocks and reinstalls: the gate and OFREP advise what the device would do, analytics count dismissed")
    func truthOnDevices() async throws {
        try await APIHarness.run { api in
            let (_, key) = try await api.createApp()
            try await api.putFeature(key, "nearby", #"{"requires": "whenInUse", "services": ["standard"]}"#)
            try await api.putFeature(key, "exact", #"{"requires": "whenInUse", "services": ["standard"], "accuracy": "full"}"#)
            let request = #"{"permissions": ["coarse", "fine"]}"#
            let events = [
                // A dialog closed with Back, then one real "Don't allow": one denial, the dialog still works.
                Self.android("d"), Self.step("permissionsRequested", request, "d", 0),
                Self.step("permissionsResult", #"{"granted": [], "denied": ["coarse", "fine"], "rationale": [], "interrupted": false}"#, "d", 1),
                Self.step("permissionsRequested", request, "d", 2),
                Self.step("permissionsResult", #"{"granted": [], "denied": ["coarse", "fine"], "rationale": ["coarse", "fine"], "interrupted": false}"#, "d", 3),
                // Granted, then "Don't allow" in Settings: one denial, no block.
                Self.android("s"), Self.step("permissionsRequested", request, "s", 0),
                Self.step("permissionsResult", #"{"granted": ["coarse", "fine"], "denied": [], "interrupted": false}"#, "s", 1),
                Self.step("settingsChanged", #"{"authorization": "never"}"#, "s", 2),
                // Approximate, then "Keep approximate" twice: precise blocked.
                Self.android("p"), Self.step("permissionsRequested", request, "p", 0),
                Self.step("permissionsResult", #"{"granted": ["coarse"], "denied": ["fine"], "rationale": ["fine"], "interrupted": false}"#, "p", 1),
                Self.step("permissionsRequested", request, "p", 2),
                Self.step("permissionsResult", #"{"granted": ["coarse"], "denied": ["fine"], "rationale": ["fine"], "interrupted": false}"#, "p", 3),
                Self.step("permissionsRequested", request, "p", 4),
                Self.step("permissionsResult", #"{"granted": ["coarse"], "denied": ["fine"], "rationale": [], "interrupted": false}"#, "p", 5),
                Self.step("permissionsRequested", request, "p", 6),
            ]
            let reply = try await api.append(key, events)
            #expect(reply.status == .ok, "\(reply.text)")
            let results = reply.json["results"] as? [[String: Any]] ?? []
            let dismissal = results[2]["effects"] as? [[String: Any]] ?? []
            #expect(dismissal.count == 1 && dismissal.first?["choice"] as? String == "dismissed", "\(dismissal)")
            let last = results.last?["effects"] as? [[String: Any]] ?? []
            #expect(last.first?["kind"] as? String == "noEffect" && last.first?["reason"] as? String == "blocked", "\(last)")
            for device in ["d", "s"] {
                let gate = try await api.call(.get, "/v1/users/u-1/devices/\(device)/gates/nearby", key: key)
                #expect(gate.json["reason"] as? String == "denied" && gate.json["action"] as? String == "requestForeground", "\(device): \(gate.text)")
            }
            let state = try await api.call(.get, "/v1/users/u-1/devices/p/state", key: key)
            let body = try #require(state.json["state"] as? [String: Any])
            #expect((body["denials"] as? [String: Any])?["precise"] as? Int == 2 && (body["blocked"] as? [String: Any])?["precise"] as? Bool == true, "\(state.text)")
            let exact = try await api.call(.get, "/v1/users/u-1/devices/p/gates/exact", key: key)
            #expect(exact.json["reason"] as? String == "reducedAccuracy" && exact.json["action"] as? String == "openSettings", "\(exact.text)")
            let ofrep = try await api.call(.post, "/ofrep/v1/evaluate/flags/exact", key: key, json: #"{"context": {"targetingKey": "u-1", "deviceId": "p"}}"#)
            #expect((ofrep.json["metadata"] as? [String: Any])?["action"] as? String == "openSettings", "\(ofrep.text)")
            let prompts = Self.rows(try await api.call(.get, "/v1/analytics/prompts?platform=android", key: key))
            let byPrompt = Dictionary(uniqueKeysWithValues: prompts.map { ($0["prompt"] as? String ?? "", $0) })
            #expect((byPrompt["foreground"]?["choices"] as? [String: Int])?["dismissed"] == 1, "\(prompts)")
            #expect(byPrompt["precise"]?["choices"] as? [String: Int] == ["keepApproximate": 2], "\(prompts)")
            // A reinstall: a new installId returns the device to a new install's state, also when
            // the installation it had was reported in an earlier request (kept by the projection).
            let first = try await api.append(key, [eventJSON("contextReported", #"{"installId": "first"}"#, device: "p", at: "2026-11-22T10:00:00Z")])
            #expect(((first.json["results"] as? [[String: Any]])?.first?["effects"] as? [[String: Any]])?.isEmpty == true, "\(first.text)")
            let installs = try await api.append(key, [eventJSON("contextReported", #"{"installId": "second"}"#, device: "p", at: "2026-11-22T10:01:00Z")])
            let reset = (installs.json["results"] as? [[String: Any]] ?? []).last?["effects"] as? [[String: Any]] ?? []
            #expect(reset.first?["kind"] as? String == "reset" && reset.first?["reason"] as? String == "reinstalled", "\(installs.text)")
            let fresh = try await api.call(.get, "/v1/users/u-1/devices/p/gates/exact", key: key)
            #expect(fresh.json["reason"] as? String == "notDetermined" && fresh.json["action"] as? String == "requestForeground", "\(fresh.text)")
            let long = try await api.append(key, [eventJSON("contextReported", #"{"installId": "\#(String(repeating: "x", count: 65))"}"#, device: "p")])
            #expect(long.status == .unprocessableContent && long.errorCode == "validationFailed", "\(long.text)")
        }
    }
}
