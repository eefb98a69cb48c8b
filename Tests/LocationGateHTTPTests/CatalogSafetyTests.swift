import PostgresClient
import Foundation
import HTTPTypes
import LocationGateTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// SPEC §15 through the API: the kill switch and the app version floor in every gate and in
/// OFREP, their validation, the preview, and the switch reaching another process and its push
/// stream within 1 s.
@Suite("HTTP: safe catalog changes (SPEC §15)", .timeLimit(.minutes(3)))
struct CatalogSafetyTests {
    static let deviceContext = #"{"context": {"targetingKey": "u-1", "deviceId": "d-1"}}"#

    /// An iOS device granted When In Use, with `appVersion` when given (no context at all
    /// otherwise).
    static func appleDevice(_ api: APIClient, _ key: String, user: String, device: String, appVersion: String?) async throws {
        var events: [String] = []
        if let appVersion {
            events.append(eventJSON("contextReported", #"{"platform": "iOS", "osVersion": "17.4", "appVersion": "\#(appVersion)"}"#, user: user, device: device))
        }
        events.append(eventJSON("settingsChanged", #"{"authorization": "whileUsing"}"#, user: user, device: device))
        let reply = try await api.append(key, events)
        #expect(reply.status == .ok, "\(reply.text)")
    }

    /// An Android device with precise location granted.
    static func androidDevice(_ api: APIClient, _ key: String, user: String, device: String, appVersion: String) async throws {
        let reply = try await api.append(key, [
            eventJSON("contextReported", #"{"platform": "android", "apiLevel": 34, "targetSdk": 34, "appVersion": "\#(appVersion)"}"#, user: user, device: device),
            eventJSON("permissionsObserved", #"{"granted": ["coarse", "fine"], "locationEnabled": true}"#, user: user, device: device),
        ])
        #expect(reply.status == .ok, "\(reply.text)")
    }

    static func gate(_ api: APIClient, _ key: String, _ user: String, _ device: String, _ feature: String = "nearby") async throws -> [String: Any] {
        let reply = try await api.call(.get, "/v1/users/\(user)/devices/\(device)/gates/\(feature)", key: key)
        #expect(reply.status == .ok, "\(reply.text)")
        return reply.json
    }

    static func ofrep(_ api: APIClient, _ key: String, _ body: String = deviceContext) async throws -> [String: Any] {
        let reply = try await api.call(.post, "/ofrep/v1/evaluate/flags/nearby", key: key, json: body)
        #expect(reply.status == .ok, "\(reply.text)")
        return reply.json
    }

    static func metadata(_ json: [String: Any], _ field: String) -> String? {
        (json["metadata"] as? [String: Any])?[field] as? String
    }

    @Test("A feature's GET shows disabled false and minAppVersion null by default, and what PUT set")
    func defaults() async throws {
        try await APIHarness.run { api in
            let (_, admin) = try await api.createApp()
            let created = try await api.call(.put, "/v1/features/nearby", key: admin, json: #"{"requires": "whenInUse"}"#)
            #expect(created.status == .created)
            #expect(created.json["disabled"] as? Bool == false && created.json["minAppVersion"] is NSNull)
            let read = try await api.call(.get, "/v1/features/nearby", key: admin)
            #expect(read.json["disabled"] as? Bool == false && read.json["minAppVersion"] is NSNull, "\(read.text)")
            let set = try await api.call(
                .put, "/v1/features/nearby", key: admin, json: #"{"requires": "whenInUse", "disabled": true, "minAppVersion": "05.2"}"#)
            #expect(set.status == .ok && set.json["disabled"] as? Bool == true && set.json["minAppVersion"] as? String == "05.2")
            let list = try await api.call(.get, "/v1/features", key: admin)
            let first = (list.json["features"] as? [[String: Any]])?.first
            #expect(first?["disabled"] as? Bool == true && first?["minAppVersion"] as? String == "05.2")
            let cleared = try await api.call(.put, "/v1/features/nearby", key: admin, json: #"{"requires": "whenInUse", "minAppVersion": null}"#)
            #expect(cleared.json["disabled"] as? Bool == false && cleared.json["minAppVersion"] is NSNull)
        }
    }

    @Test("The kill switch: every gate disabledByOperator / none with the real status, user level and OFREP DISABLED; and back")
    func killSwitch() async throws {
        try await APIHarness.run { api in
            let (_, admin) = try await api.createApp()
            try await api.putFeature(admin, "nearby", #"{"requires": "whenInUse"}"#)
            try await Self.appleDevice(api, admin, user: "u-1", device: "d-1", appVersion: "5.1")
            try await Self.androidDevice(api, admin, user: "u-2", device: "a-1", appVersion: "5.3")
            #expect(try await Self.gate(api, admin, "u-1", "d-1")["enabled"] as? Bool == true)

            try await api.putFeature(admin, "nearby", #"{"requires": "whenInUse", "disabled": true}"#)
            for (user, device) in [("u-1", "d-1"), ("u-2", "a-1"), ("u-3", "never-seen")] {
                let gate = try await Self.gate(api, admin, user, device)
                #expect(gate["enabled"] as? Bool == false && gate["reason"] as? String == "disabledByOperator", "\(device)")
                #expect(gate["action"] as? String == "none" && gate["missingKeys"] == nil, "\(device)")
            }
            let apple = try await Self.gate(api, admin, "u-1", "d-1")
            #expect(apple["status"] as? String == "authorizedWhenInUse" && apple["accuracy"] as? String == "full", "the device's real status")
            #expect(try await Self.gate(api, admin, "u-2", "a-1")["status"] as? String == "authorizedWhenInUse")
            let all = try await api.call(.get, "/v1/users/u-1/devices/d-1/gates", key: admin)
            #expect((all.json["decisions"] as? [[String: Any]])?.first?["reason"] as? String == "disabledByOperator")
            let user = try await api.call(.get, "/v1/users/u-1/gates", key: admin)
            let verdict = (user.json["decisions"] as? [[String: Any]])?.first
            #expect(verdict?["enabled"] as? Bool == false)
            #expect((verdict?["devices"] as? [[String: Any]])?.first?["reason"] as? String == "disabledByOperator")

            // OFREP: value false, reason DISABLED, for a device, a user and in bulk.
            let device = try await Self.ofrep(api, admin)
            #expect(device["value"] as? Bool == false && device["variant"] as? String == "disabled")
            #expect(device["reason"] as? String == "DISABLED", "\(device)")
            #expect(Self.metadata(device, "reason") == "disabledByOperator" && Self.metadata(device, "status") == "authorizedWhenInUse")
            let userLevel = try await Self.ofrep(api, admin, #"{"context": {"targetingKey": "u-1"}}"#)
            #expect(userLevel["value"] as? Bool == false && userLevel["reason"] as? String == "DISABLED")
            let bulk = try await api.call(.post, "/ofrep/v1/evaluate/flags", key: admin, json: Self.deviceContext)
            let flag = (bulk.json["flags"] as? [[String: Any]])?.first
            #expect(flag?["value"] as? Bool == false && flag?["reason"] as? String == "DISABLED")

            // Switched on again: the table decides again.
            try await api.putFeature(admin, "nearby", #"{"requires": "whenInUse", "disabled": false}"#)
            let back = try await Self.gate(api, admin, "u-1", "d-1")
            #expect(back["enabled"] as? Bool == true && back["reason"] as? String == "authorized")
            let again = try await Self.ofrep(api, admin)
            #expect(again["value"] as? Bool == true && again["reason"] as? String == "TARGETING_MATCH")
        }
    }

    @Test("minAppVersion: a lower or absent appVersion is appVersionTooOld / updateApp on both platforms; the latest context counts")
    func versionFloor() async throws {
        try await APIHarness.run { api in
            let (_, admin) = try await api.createApp()
            let reply = try await api.call(.put, "/v1/features/nearby", key: admin, json: #"{"requires": "whenInUse", "minAppVersion": "5.2"}"#)
            #expect(reply.status == .created && reply.json["minAppVersion"] as? String == "5.2")
            try await Self.appleDevice(api, admin, user: "u-1", device: "d-1", appVersion: "5.1")
            try await Self.appleDevice(api, admin, user: "u-1", device: "d-2", appVersion: "5.2.1-beta")
            try await Self.appleDevice(api, admin, user: "u-1", device: "d-3", appVersion: nil)
            try await Self.androidDevice(api, admin, user: "u-2", device: "a-1", appVersion: "5.3")
            try await Self.androidDevice(api, admin, user: "u-2", device: "a-2", appVersion: "4.9.9")
            for (user, device, enabled) in [("u-1", "d-1", false), ("u-1", "d-2", true), ("u-1", "d-3", false), ("u-2", "a-1", true), ("u-2", "a-2", false)] {
                let gate = try await Self.gate(api, admin, user, device)
                #expect(gate["enabled"] as? Bool == enabled, "\(device)")
                #expect(gate["reason"] as? String == (enabled ? "authorized" : "appVersionTooOld"), "\(device)")
                #expect(gate["action"] as? String == (enabled ? "none" : "updateApp"), "\(device)")
                #expect(gate["status"] as? String == "authorizedWhenInUse", "\(device): the real status")
            }
            // A device never seen has no appVersion either.
            #expect(try await Self.gate(api, admin, "u-9", "d-9")["reason"] as? String == "appVersionTooOld")
            // OFREP: off, as any other "no" (TARGETING_MATCH), the reason and action in its metadata.
            let old = try await Self.ofrep(api, admin)
            #expect(old["value"] as? Bool == false && old["reason"] as? String == "TARGETING_MATCH")
            #expect(Self.metadata(old, "reason") == "appVersionTooOld" && Self.metadata(old, "action") == "updateApp")
            // The user level: one device meets the floor.
            #expect(try await Self.ofrep(api, admin, #"{"context": {"targetingKey": "u-1"}}"#)["value"] as? Bool == true)
            // The app is updated: its latest context counts.
            let updated = try await api.append(admin, [eventJSON("contextReported", #"{"appVersion": "5.2"}"#, user: "u-1", device: "d-1")])
            #expect(updated.status == .ok, "\(updated.text)")
            #expect(try await Self.gate(api, admin, "u-1", "d-1")["reason"] as? String == "authorized")
            // The kill switch comes first.
            try await api.putFeature(admin, "nearby", #"{"requires": "whenInUse", "minAppVersion": "5.2", "disabled": true}"#)
            #expect(try await Self.gate(api, admin, "u-1", "d-3")["reason"] as? String == "disabledByOperator")
        }
    }

    @Test("A minAppVersion that is not 1 to 4 dot-separated numbers, or not a string, is a 422 naming the field; nothing stored")
    func badVersionFloor() async throws {
        try await APIHarness.run { api in
            let (_, admin) = try await api.createApp()
            try await api.putFeature(admin, "nearby", #"{"requires": "whenInUse", "minAppVersion": "3"}"#)
            let values = [#""5.x""#, #""""#, #""1.2.3.4.5""#, #""v5""#, #"" 5""#, #""5.""#, #""5.2-beta""#, #""1234567890123456789""#,
                          "5", "5.2", #"["5"]"#, #"{"v": 5}"#, "true"]
            for value in values {
                for key in ["nearby", "fresh"] {
                    let body = #"{"requires": "whenInUse", "minAppVersion": \#(value)}"#
                    let put = try await api.call(.put, "/v1/features/\(key)", key: admin, json: body)
                    #expect(put.status == .unprocessableContent && put.errorCode == "validationFailed", "\(value): \(put.text)")
                    let message = (put.json["error"] as? [String: Any])?["message"] as? String ?? ""
                    #expect(message.hasPrefix("minAppVersion"), "\(value): \(message)")
                    let preview = try await api.call(.post, "/v1/features/\(key)/preview", key: admin, json: body)
                    #expect(preview.status == .unprocessableContent && preview.errorCode == "validationFailed", "\(value): \(preview.text)")
                }
            }
            #expect(try await api.call(.get, "/v1/features/nearby", key: admin).json["minAppVersion"] as? String == "3")
            #expect(try await api.call(.get, "/v1/features/fresh", key: admin).status == .notFound)
            // `disabled` is a boolean: anything else is a mistyped field (400).
            let mistyped = try await api.call(.put, "/v1/features/nearby", key: admin, json: #"{"requires": "whenInUse", "disabled": "yes"}"#)
            #expect(mistyped.status == .badRequest && mistyped.errorCode == "invalidRequest", "\(mistyped.text)")
            #expect(try await api.call(.get, "/v1/features/nearby", key: admin).json["disabled"] as? Bool == false)
        }
    }

    @Test("Preview: counts by pair, largest first, by platform, samples; a new key against no feature; admin only; nothing stored")
    func preview() async throws {
        try await APIHarness.run { api in
            let (_, admin) = try await api.createApp()
            try await api.putFeature(admin, "nearby", #"{"requires": "whenInUse"}"#)
            for index in 0..<3 {
                try await Self.appleDevice(api, admin, user: "old-\(index)", device: "phone", appVersion: "5.1")
            }
            try await Self.appleDevice(api, admin, user: "new-0", device: "phone", appVersion: "6.0")
            try await Self.androidDevice(api, admin, user: "old-a", device: "pixel", appVersion: "4.0")
            try await Self.appleDevice(api, admin, user: "none-0", device: "phone", appVersion: nil)
            let gatesBefore = try await api.call(.get, "/v1/users/old-0/devices/phone/gates", key: admin).text
            let body = #"{"requires": "whenInUse", "minAppVersion": "5.2"}"#

            let reply = try await api.call(.post, "/v1/features/nearby/preview", key: admin, json: body)
            #expect(reply.status == .ok, "\(reply.text)")
            #expect(reply.json["devices"] as? Int == 6)
            let changes = reply.json["changes"] as? [[String: Any]] ?? []
            #expect(changes.count == 1, "\(reply.text)")
            let change = changes.first ?? [:]
            #expect((change["from"] as? [String: Any])?["enabled"] as? Bool == true)
            #expect((change["from"] as? [String: Any])?["reason"] as? String == "authorized")
            #expect((change["to"] as? [String: Any])?["enabled"] as? Bool == false)
            #expect((change["to"] as? [String: Any])?["reason"] as? String == "appVersionTooOld")
            #expect(change["devices"] as? Int == 5)
            #expect(change["byPlatform"] as? [String: Int] == ["iOS": 4, "android": 1])
            let sample = (change["sample"] as? [[String: Any]] ?? []).compactMap { entry -> String? in
                guard let user = entry["userId"] as? String, let device = entry["deviceId"] as? String else { return nil }
                return "\(user)/\(device)"
            }
            #expect(Set(sample) == ["old-0/phone", "old-1/phone", "old-2/phone", "old-a/pixel", "none-0/phone"])

            // A new key: every device from unknownFeature, the largest pair first.
            let fresh = try await api.call(.post, "/v1/features/fresh/preview", key: admin, json: #"{"requires": "always", "minAppVersion": "5.2"}"#)
            #expect(fresh.status == .ok, "\(fresh.text)")
            let freshChanges = fresh.json["changes"] as? [[String: Any]] ?? []
            #expect(freshChanges.allSatisfy { ($0["from"] as? [String: Any])?["reason"] as? String == "unknownFeature" })
            #expect(freshChanges.allSatisfy { ($0["from"] as? [String: Any])?["enabled"] as? Bool == false })
            #expect(freshChanges.compactMap { $0["devices"] as? Int } == [5, 1])
            #expect((freshChanges.first?["to"] as? [String: Any])?["reason"] as? String == "appVersionTooOld")

            // The same definition: no change.
            let same = try await api.call(.post, "/v1/features/nearby/preview", key: admin, json: #"{"requires": "whenInUse"}"#)
            #expect(same.json["devices"] as? Int == 6 && (same.json["changes"] as? [Any])?.isEmpty == true, "\(same.text)")

            // Admin scope only.
            let read = try await api.createKey(admin, scope: "read")
            let ingest = try await api.createKey(admin, scope: "ingest")
            #expect(try await api.call(.post, "/v1/features/nearby/preview", key: read, json: body).status == .forbidden)
            #expect(try await api.call(.post, "/v1/features/nearby/preview", key: ingest, json: body).status == .forbidden)
            #expect(try await api.call(.post, "/v1/features/nearby/preview", json: body).status == .unauthorized)
            // The body as PUT reads it.
            #expect(try await api.call(.post, "/v1/features/nearby/preview", key: admin, json: "[").errorCode == "malformedJSON")
            #expect(try await api.call(.post, "/v1/features/nearby/preview", key: admin, json: #"{"services": []}"#).errorCode == "invalidRequest")
            #expect(try await api.call(.post, "/v1/features/bad%20key/preview", key: admin, json: body).status == .unprocessableContent)

            // Nothing was stored.
            let stored = try await api.call(.get, "/v1/features/nearby", key: admin)
            #expect(stored.json["minAppVersion"] is NSNull && stored.json["disabled"] as? Bool == false)
            #expect(try await api.call(.get, "/v1/features/fresh", key: admin).status == .notFound)
            #expect(try await api.call(.get, "/v1/users/old-0/devices/phone/gates", key: admin).text == gatesBefore)
        }
    }

    @Test("The kill switch reaches another process's gates, OFREP and push stream within 1 s, on and off")
    func killSwitchAcrossProcesses() async throws {
        #expect(FileManager.default.isExecutableFile(atPath: LocgateServer.binary.path), "build locgate first: \(LocgateServer.binary.path)")
        let configuration = try await TestDatabase.configuration()
        let url = try TestDatabase.serverConfiguration().connectionString
        let name = configuration.overrides["dbname"] ?? ""
        let base = 24_000 + Int.random(in: 0..<8_000)
        let first = try LocgateServer(port: base + 6, databaseURL: url, databaseName: name)
        let second = try LocgateServer(port: base + 7, databaseURL: url, databaseName: name)
        defer {
            first.stop()
            second.stop()
        }
        try await TwoProcessTests.waitReady(first.port)
        try await TwoProcessTests.waitReady(second.port)
        let (_, app) = try await LocgateServer.request("POST", first.port, "/v1/apps", key: LocgateServer.adminToken, json: #"{"name": "switch"}"#)
        let key = app["apiKey"] as? String ?? ""
        #expect(try await LocgateServer.request("PUT", first.port, "/v1/features/nearby", key: key, json: #"{"requires": "whenInUse"}"#).0 == 201)
        let event = #"{"id": "\#(UUID())", "userId": "u", "deviceId": "d", "occurredAt": "2026-11-22T10:00:00Z", "type": "settingsChanged", "data": {"authorization": "whileUsing"}}"#
        #expect(try await LocgateServer.request("POST", first.port, "/v1/events", key: key, json: #"{"events": [\#(event)]}"#).0 == 200)
        func reason() async throws -> String? {
            try await LocgateServer.request("GET", second.port, "/v1/users/u/devices/d/gates/nearby", key: key).1["reason"] as? String
        }
        // The second process has the device and the catalog (and may cache both).
        let granted = try await TwoProcessTests.converge(after: ContinuousClock.now) { try await reason() == "authorized" }
        #expect(granted.seen != nil, "\(granted)")

        let stream = try #require(RawEventStream(port: second.port, path: "/ofrep/v1/event-streams?targetingKey=u&deviceId=d", key: key))
        #expect(stream.wait(for: "refetchEvaluation", count: 1, timeout: .seconds(5)), "a (re)connect gets refetchEvaluation at once")
        for (round, disabled) in [true, false].enumerated() {
            let (status, _) = try await LocgateServer.request(
                "PUT", first.port, "/v1/features/nearby", key: key, json: #"{"requires": "whenInUse", "disabled": \#(disabled)}"#)
            #expect(status == 200)
            let acknowledged = ContinuousClock.now
            let expected = disabled ? "disabledByOperator" : "authorized"
            let gate = try await TwoProcessTests.converge(after: acknowledged) { try await reason() == expected }
            #expect(gate.holds(TwoProcessTests.coherenceBound), "\(expected): \(gate)")
            let left = TwoProcessTests.coherenceBound - (ContinuousClock.now - acknowledged)
            #expect(stream.wait(for: "refetchEvaluation", count: round + 2, timeout: left), "\(expected): no refetchEvaluation within 1 s")
            let (_, evaluation) = try await LocgateServer.request(
                "POST", second.port, "/ofrep/v1/evaluate/flags/nearby", key: key, json: #"{"context": {"targetingKey": "u", "deviceId": "d"}}"#)
            #expect(evaluation["value"] as? Bool == !disabled)
            #expect(evaluation["reason"] as? String == (disabled ? "DISABLED" : "TARGETING_MATCH"), "\(evaluation)")
        }
    }
}

/// A push stream read over a plain socket, as a client far away would: the test counts the
/// messages that arrived. Each server-sent event is written whole, so its text is never split
/// by the chunked encoding's framing.
final class RawEventStream {
    private let descriptor: Int32
    private var received: [UInt8] = []

    init?(port: Int, path: String, key: String) {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { return nil }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        let head = Array(
            "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nAuthorization: Bearer \(key)\r\nAccept: text/event-stream\r\n\r\n".utf8)
        let sent = connected == 0 ? head.withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, 0) } : -1
        guard sent == head.count else {
            close(descriptor)
            return nil
        }
        self.descriptor = descriptor
    }

    deinit {
        close(descriptor)
    }

    /// Reads until `text` has arrived `count` times in all; false when `timeout` passes first
    /// (what already arrived is read even when the time is up) or the server closes the stream.
    func wait(for text: String, count: Int, timeout: Duration) -> Bool {
        let deadline = ContinuousClock.now + timeout
        while true {
            let left = deadline - ContinuousClock.now
            let milliseconds = left > .zero ? Int32(min(60_000, left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000 + 1)) : 0
            var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            if poll(&poller, 1, milliseconds) > 0 {
                var chunk = [UInt8](repeating: 0, count: 4096)
                let read = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
                guard read > 0 else { return occurrences(of: text) >= count }
                received += chunk[..<read]
            }
            if occurrences(of: text) >= count { return true }
            if ContinuousClock.now >= deadline { return false }
        }
    }

    private func occurrences(of text: String) -> Int {
        String(decoding: received, as: UTF8.self).components(separatedBy: text).count - 1
    }
}
