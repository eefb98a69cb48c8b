import Crypto
import Foundation
import HTTPTypes
import LocationGateService
import LocationGateTestSupport
import Testing

/// A device-bound ingest key appends only with a device token from the app's backend, and
/// only for the user (and device) the token names; an ingest key's answer never carries the
/// device's state.
@Suite("Device-bound ingest keys", .timeLimit(.minutes(2)))
struct DeviceBoundIngestTests {
    static func bound(_ api: APIClient, _ admin: String) async throws -> (key: String, secret: String) {
        let reply = try await api.call(.post, "/v1/keys", key: admin, json: #"{"scope": "ingest", "deviceBound": true}"#)
        #expect(reply.status == .created && reply.json["deviceBound"] as? Bool == true)
        return (reply.json["key"] as? String ?? "", reply.json["tokenSecret"] as? String ?? "")
    }

    static func append(_ api: APIClient, _ key: String, token: String?, _ events: [String]) async throws -> Reply {
        var headers: HTTPFields = [:]
        if let token { headers[HTTPField.Name("X-Device-Token")!] = token }
        return try await api.call(.post, "/v1/events", key: key, json: #"{"events": [\#(events.joined(separator: ","))]}"#, headers: headers)
    }

    static func stored(_ api: APIClient, _ admin: String, user: String, device: String = "d-1") async throws -> Int {
        let history = try await api.call(.get, "/v1/users/\(user)/devices/\(device)/history", key: admin)
        return (history.json["entries"] as? [Any])?.count ?? 0
    }

    @Test("A token for u-1 appends u-1's events; u-2's event in the batch is 403 naming it, and nothing of the batch is stored")
    func tokenCoversItsUserOnly() async throws {
        try await APIHarness.run { api in
            let (_, admin) = try await api.createApp()
            let (key, secret) = try await Self.bound(api, admin)
            #expect(secret.hasPrefix("lgs_") && secret.count == 47)
            let token = DeviceToken.sign(userID: "u-1", expires: Date().addingTimeInterval(600), secret: secret)
            let ok = try await Self.append(api, key, token: token, [eventJSON("appStateChanged", #"{"state": "foreground"}"#, user: "u-1")])
            #expect(ok.status == .ok, "\(ok.text)")
            let mixed = try await Self.append(api, key, token: token, [
                eventJSON("appStateChanged", #"{"state": "background"}"#, user: "u-1"),
                eventJSON("statusObserved", #"{"status": "authorizedAlways"}"#, user: "u-2"),
            ])
            #expect(mixed.status == .forbidden && mixed.errorCode == "forbidden" && mixed.errorIndex == 1, "\(mixed.text)")
            #expect(try await Self.stored(api, admin, user: "u-1") == 1)
            #expect(try await Self.stored(api, admin, user: "u-2") == 0)
        }
    }

    @Test("A token naming a device covers that device alone")
    func tokenWithDevice() async throws {
        try await APIHarness.run { api in
            let (_, admin) = try await api.createApp()
            let (key, secret) = try await Self.bound(api, admin)
            let token = DeviceToken.sign(userID: "u-1", deviceID: "d-1", expires: Date().addingTimeInterval(600), secret: secret)
            let other = try await Self.append(api, key, token: token, [eventJSON("appStateChanged", #"{"state": "foreground"}"#, user: "u-1", device: "d-2")])
            #expect(other.status == .forbidden && other.errorIndex == 0)
            let own = try await Self.append(api, key, token: token, [eventJSON("appStateChanged", #"{"state": "foreground"}"#, user: "u-1", device: "d-1")])
            #expect(own.status == .ok)
        }
    }

    @Test("No token, a token of another key's secret, an expired token: 401, nothing stored; an unbound ingest key needs none")
    func refusedTokens() async throws {
        try await APIHarness.run { api in
            let (_, admin) = try await api.createApp()
            let (key, _) = try await Self.bound(api, admin)
            let (_, otherSecret) = try await Self.bound(api, admin)
            let event = eventJSON("appStateChanged", #"{"state": "foreground"}"#, user: "u-1")
            for token in [
                nil, DeviceToken.sign(userID: "u-1", expires: Date().addingTimeInterval(600), secret: otherSecret),
                "not-a-token",
            ] as [String?] {
                let reply = try await Self.append(api, key, token: token, [event])
                #expect(reply.status == .unauthorized && reply.errorCode == "unauthorized", "\(reply.text)")
            }
            #expect(try await Self.stored(api, admin, user: "u-1") == 0)
            let plain = try await api.createKey(admin, scope: "ingest")
            #expect(try await Self.append(api, plain, token: nil, [event]).status == .ok)
            // Only ingest keys can be bound.
            let read = try await api.call(.post, "/v1/keys", key: admin, json: #"{"scope": "read", "deviceBound": true}"#)
            #expect(read.status == .unprocessableContent && read.errorCode == "validationFailed")
        }
    }

    @Test("An ingest key's answer identifies the stored events without status or effects; an admin key's carries them")
    func ingestAnswerCarriesNoState() async throws {
        try await APIHarness.run { api in
            let (_, admin) = try await api.createApp()
            let ingest = try await api.createKey(admin, scope: "ingest")
            let reply = try await api.append(ingest, [eventJSON("statusObserved", #"{"status": "authorizedAlways"}"#)])
            let result = try #require((reply.json["results"] as? [[String: Any]])?.first)
            #expect(Set(result.keys) == ["id", "userId", "deviceId", "version", "duplicate"], "\(result.keys)")
            let full = try await api.append(admin, [eventJSON("appStateChanged", #"{"state": "foreground"}"#)])
            let fullResult = try #require((full.json["results"] as? [[String: Any]])?.first)
            #expect(fullResult["status"] as? String == "authorizedAlways" && fullResult["effects"] != nil)
        }
    }

    @Test("A device token whose header has crit is 401 unauthorized like any invalid token, and nothing is stored")
    func criticalHeaderRefused() async throws {
        try await APIHarness.run { api in
            let (_, admin) = try await api.createApp()
            let (key, secret) = try await Self.bound(api, admin)
            func encode(_ data: Data) -> String {
                data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                    .replacingOccurrences(of: "=", with: "")
            }
            let head = encode(Data(#"{"alg":"HS256","typ":"JWT","crit":["exp"]}"#.utf8))
            let body = encode(Data(#"{"sub":"u-1","exp":\#(Int(Date().timeIntervalSince1970) + 600)}"#.utf8))
            let mac = HMAC<SHA256>.authenticationCode(for: Data("\(head).\(body)".utf8), using: SymmetricKey(data: Data(secret.utf8)))
            let token = "\(head).\(body).\(encode(Data(mac)))"
            let event = eventJSON("appStateChanged", #"{"state": "foreground"}"#, user: "u-1")
            let reply = try await Self.append(api, key, token: token, [event])
            #expect(reply.status == .unauthorized && reply.errorCode == "unauthorized", "\(reply.text)")
            #expect(try await Self.stored(api, admin, user: "u-1") == 0)
            // The same claims under a header without crit are accepted.
            let plain = DeviceToken.sign(userID: "u-1", expires: Date().addingTimeInterval(600), secret: secret)
            #expect(try await Self.append(api, key, token: plain, [event]).status == .ok)
        }
    }
}
