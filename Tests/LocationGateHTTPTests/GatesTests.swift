import Foundation
import HTTPTypes
import Testing

@Suite("HTTP: gates, state and history", .timeLimit(.minutes(2)))
struct GatesTests {
    /// An app with two features and a device in Provisional Always.
    static func setUp(_ api: APIClient) async throws -> String {
        let (_, admin) = try await api.createApp()
        try await api.putFeature(admin, "arrival-lights", #"{"requires": "always", "services": ["regionMonitoring"]}"#)
        try await api.putFeature(admin, "nearby", #"{"requires": "whenInUse", "services": ["standard"]}"#)
        let reply = try await api.append(admin, [
            eventJSON("contextReported", #"{"platform": "iOS", "osVersion": "17.4"}"#, at: "2026-11-20T10:00:00Z"),
            eventJSON("authorizationRequested", #"{"request": "always"}"#, at: "2026-11-20T11:00:00Z"),
            eventJSON("promptResponded", #"{"choice": "allowWhileUsing"}"#, at: "2026-11-20T12:00:00Z"),
        ])
        #expect(reply.status == .ok)
        return admin
    }

    @Test("Device gates: every feature's decision with status, provisional, accuracy and version")
    func deviceGates() async throws {
        try await APIHarness.run { api in
            let admin = try await Self.setUp(api)
            let reply = try await api.call(.get, "/v1/users/u-1/devices/d-1/gates", key: admin)
            #expect(reply.status == .ok)
            #expect(reply.json["status"] as? String == "authorizedAlways" && reply.json["provisional"] as? Bool == true)
            #expect(reply.json["version"] as? Int == 3 && reply.json["accuracy"] as? String == "full")
            let decisions = reply.json["decisions"] as? [[String: Any]] ?? []
            #expect(decisions.map { $0["feature"] as? String } == ["arrival-lights", "nearby"])
            #expect(decisions.allSatisfy { $0["enabled"] as? Bool == true && $0["reason"] as? String == "authorized" })
            let one = try await api.call(.get, "/v1/users/u-1/devices/d-1/gates/arrival-lights", key: admin)
            #expect(one.json["requiredTier"] as? String == "always" && one.json["version"] as? Int == 3)
            #expect(try await api.call(.get, "/v1/users/u-1/devices/d-1/gates/nope", key: admin).status == .notFound)
            // A device with no events is notDetermined at version 0.
            let fresh = try await api.call(.get, "/v1/users/u-1/devices/new/gates/nearby", key: admin)
            #expect(fresh.json["reason"] as? String == "notDetermined" && fresh.json["action"] as? String == "requestWhenInUse" && fresh.json["version"] as? Int == 0)
            let bad = try await api.call(.get, "/v1/users/u%201/devices/d-1/gates", key: admin)
            #expect(bad.status == .unprocessableContent && bad.errorCode == "validationFailed")
        }
    }

    @Test("User gates: enabled when any device is; a user without devices is one fresh device")
    func userGates() async throws {
        try await APIHarness.run { api in
            let admin = try await Self.setUp(api)
            _ = try await api.append(admin, [eventJSON("authorizationRequested", #"{"request": "whenInUse"}"#, device: "d-2"),
                                             eventJSON("promptResponded", #"{"choice": "dontAllow"}"#, device: "d-2")])
            let reply = try await api.call(.get, "/v1/users/u-1/gates", key: admin)
            let decisions = reply.json["decisions"] as? [[String: Any]] ?? []
            let arrival = decisions.first { $0["feature"] as? String == "arrival-lights" }
            #expect(arrival?["enabled"] as? Bool == true)
            let devices = arrival?["devices"] as? [[String: Any]] ?? []
            #expect(devices.map { $0["deviceId"] as? String } == ["d-1", "d-2"])
            #expect(devices.last?["reason"] as? String == "denied" && devices.last?["action"] as? String == "openSettings")
            let nobody = try await api.call(.get, "/v1/users/nobody/gates", key: admin)
            #expect(((nobody.json["decisions"] as? [[String: Any]]) ?? []).allSatisfy { $0["enabled"] as? Bool == false })
        }
    }

    @Test("POST /v1/gates/query: many devices, chosen features; unknown feature 422; too many devices 413")
    func query() async throws {
        try await APIHarness.run { api in
            let admin = try await Self.setUp(api)
            let body = #"{"devices": [{"userId": "u-1", "deviceId": "d-1"}, {"userId": "u-9", "deviceId": "d-9"}], "features": ["nearby"]}"#
            let reply = try await api.call(.post, "/v1/gates/query", key: admin, json: body)
            let results = reply.json["results"] as? [[String: Any]] ?? []
            #expect(results.count == 2)
            let decisions = results.map { ($0["decisions"] as? [[String: Any]])?.first?["reason"] as? String }
            #expect(decisions == ["authorized", "notDetermined"])
            let all = try await api.call(.post, "/v1/gates/query", key: admin, json: #"{"devices": [{"userId": "u-1", "deviceId": "d-1"}]}"#)
            #expect(((all.json["results"] as? [[String: Any]])?.first?["decisions"] as? [Any])?.count == 2)
            let unknown = try await api.call(.post, "/v1/gates/query", key: admin, json: #"{"devices": [], "features": ["nope"]}"#)
            #expect(unknown.status == .unprocessableContent)
            let many = (0...10_000).map { #"{"userId": "u", "deviceId": "d\#($0)"}"# }.joined(separator: ",")
            #expect(try await api.call(.post, "/v1/gates/query", key: admin, json: #"{"devices": [\#(many)]}"#).status == .contentTooLarge)
            #expect(try await api.call(.post, "/v1/gates/query", key: admin, json: #"{"features": []}"#).errorCode == "invalidRequest")
        }
    }

    @Test("Tenant isolation: another app's key never sees this app's devices or history")
    func isolation() async throws {
        try await APIHarness.run { api in
            _ = try await Self.setUp(api)
            let (_, other) = try await api.createApp("other")
            try await api.putFeature(other, "nearby", #"{"requires": "whenInUse"}"#)
            let gates = try await api.call(.get, "/v1/users/u-1/devices/d-1/gates", key: other)
            #expect(gates.json["version"] as? Int == 0 && gates.json["status"] as? String == "notDetermined")
            let history = try await api.call(.get, "/v1/users/u-1/devices/d-1/history", key: other)
            #expect((history.json["entries"] as? [Any])?.isEmpty == true)
            #expect(try await api.call(.get, "/v1/users/u-1/devices/d-1/state?version=1", key: other).status == .notFound)
        }
    }

    @Test("History: entries with effects and before/after, paged by afterVersion and limit")
    func history() async throws {
        try await APIHarness.run { api in
            let admin = try await Self.setUp(api)
            let first = try await api.call(.get, "/v1/users/u-1/devices/d-1/history?limit=2", key: admin)
            let entries = first.json["entries"] as? [[String: Any]] ?? []
            #expect(entries.map { $0["version"] as? Int } == [1, 2])
            #expect(first.json["nextAfterVersion"] as? Int == 2)
            #expect((entries[1]["data"] as? [String: Any])?["request"] as? String == "always")
            #expect((entries[1]["after"] as? [String: Any])?["status"] as? String == "notDetermined")
            let second = try await api.call(.get, "/v1/users/u-1/devices/d-1/history?afterVersion=2&limit=2", key: admin)
            let last = (second.json["entries"] as? [[String: Any]])?.first
            #expect((last?["before"] as? [String: Any])?["status"] as? String == "notDetermined")
            #expect((last?["after"] as? [String: Any])?["provisional"] as? Bool == true)
            #expect(second.json.keys.contains("nextAfterVersion") && second.json["nextAfterVersion"] is NSNull)
            #expect(try await api.call(.get, "/v1/users/u-1/devices/d-1/history?limit=1001", key: admin).errorCode == "invalidRequest")
            #expect(try await api.call(.get, "/v1/users/u-1/devices/d-1/history?afterVersion=x", key: admin).status == .badRequest)
        }
    }

    @Test("State as of a version or a time; both at once is 400; beyond the stream is 404")
    func state() async throws {
        try await APIHarness.run { api in
            let admin = try await Self.setUp(api)
            let two = try await api.call(.get, "/v1/users/u-1/devices/d-1/state?version=2", key: admin)
            #expect(two.json["version"] as? Int == 2)
            #expect((two.json["state"] as? [String: Any])?["pendingPrompt"] as? String == "alwaysFirst")
            #expect(((two.json["decisions"] as? [[String: Any]])?.first)?["reason"] as? String == "awaitingResponse")
            let asOf = try await api.call(.get, "/v1/users/u-1/devices/d-1/state?asOf=2026-11-20T11:30:00Z", key: admin)
            #expect(asOf.json["version"] as? Int == 2)
            let early = try await api.call(.get, "/v1/users/u-1/devices/d-1/state?asOf=2026-01-01T00:00:00Z", key: admin)
            #expect(early.json["version"] as? Int == 0 && (early.json["state"] as? [String: Any])?["status"] as? String == "notDetermined")
            let now = try await api.call(.get, "/v1/users/u-1/devices/d-1/state", key: admin)
            #expect((now.json["state"] as? [String: Any])?["provisional"] as? Bool == true)
            #expect(try await api.call(.get, "/v1/users/u-1/devices/d-1/state?version=4", key: admin).status == .notFound)
            #expect(try await api.call(.get, "/v1/users/u-1/devices/d-1/state?version=1&asOf=2026-11-20T11:30:00Z", key: admin).status == .badRequest)
            #expect(try await api.call(.get, "/v1/users/u-1/devices/d-1/state?asOf=yesterday", key: admin).status == .badRequest)
        }
    }
}
