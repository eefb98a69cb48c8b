import Foundation
import HTTPTypes
import LocationGateTestSupport
import PostgresClient
import Testing

/// SPEC §1 "Strings" at the edge, and SPEC §5: every error has the JSON body, routing
/// included; OFREP keeps OFREP's bodies.
@Suite("HTTP: bad input and error bodies", .timeLimit(.minutes(2)))
struct ErrorBodiesTests {
    @Test("Unknown paths are 404 notFound and known paths with another method 405 methodNotAllowed, with JSON bodies")
    func routing() async throws {
        try await APIHarness.run { api in
            let unknown = try await api.call(.get, "/nope")
            #expect(unknown.status == .notFound && unknown.errorCode == "notFound")
            let unknownV1 = try await api.call(.post, "/v1/users/u/devices/d/nothing")
            #expect(unknownV1.status == .notFound && unknownV1.errorCode == "notFound")
            let method = try await api.call(.delete, "/v1/events")
            #expect(method.status == .methodNotAllowed && method.errorCode == "methodNotAllowed")
            #expect(method.headers[.allow] == "POST")
            let features = try await api.call(.post, "/v1/features/x")
            #expect(features.status == .methodNotAllowed && features.headers[.allow] == "PUT, PATCH, GET, DELETE")
            let ofrep = try await api.call(.get, "/ofrep/v1/evaluate/flags")
            #expect(ofrep.status == .methodNotAllowed && ofrep.json["errorCode"] as? String == "GENERAL")
        }
    }

    @Test("OFREP: a body over 64 KiB is 413 with OFREP's body")
    func ofrepTooLarge() async throws {
        try await APIHarness.run { api in
            let (_, key) = try await api.createApp()
            let big = #"{"context": {"targetingKey": "u", "padding": "\#(String(repeating: "x", count: 70_000))"}}"#
            let reply = try await api.call(.post, "/ofrep/v1/evaluate/flags", key: key, json: big)
            #expect(reply.status == .contentTooLarge && reply.json["errorCode"] as? String == "GENERAL", "\(reply.text)")
        }
    }

    @Test("App names: 1 to 200 bytes without control characters, stored exactly as sent")
    func appNames() async throws {
        try await APIHarness.run { api in
            let nul = try await api.call(.post, "/v1/apps", key: APIHarness.adminToken, json: #"{"name": "abc\u0000def"}"#)
            #expect(nul.status == .unprocessableContent && nul.errorCode == "validationFailed")
            let message = (nul.json["error"] as? [String: Any])?["message"] as? String ?? ""
            #expect(message.hasPrefix("name:"))
            let tab = try await api.call(.post, "/v1/apps", key: APIHarness.adminToken, json: #"{"name": "a\tb"}"#)
            #expect(tab.status == .unprocessableContent)
            // 100 characters, 200 bytes: accepted; 201 bytes: refused.
            let wide = String(repeating: "é", count: 100)
            let over = try await api.call(.post, "/v1/apps", key: APIHarness.adminToken, json: #"{"name": "\#(wide)a"}"#)
            #expect(over.status == .unprocessableContent, "201 bytes")
            let exact = try await api.call(.post, "/v1/apps", key: APIHarness.adminToken, json: #"{"name": "\#(wide)"}"#)
            #expect(exact.status == .created && exact.json["name"] as? String == wide)
            let spaced = try await api.call(.post, "/v1/apps", key: APIHarness.adminToken, json: #"{"name": "  padded  "}"#)
            #expect(spaced.status == .created && spaced.json["name"] as? String == "  padded  ")
            let pool = try await TestDatabase.pool(size: 1)
            for (reply, name) in [(exact, wide), (spaced, "  padded  ")] {
                let id = UUID(uuidString: reply.json["appId"] as? String ?? "") ?? UUID()
                let stored = try await pool.query("SELECT name FROM apps WHERE id = \(id)").first?.decode(0, as: String.self)
                #expect(stored == name)
            }
            await pool.close()
        }
    }

    @Test("Features: keys of 1 to 64 bytes of A-Z a-z 0-9 . _ -, descriptions up to 1,000 bytes without controls")
    func featureStrings() async throws {
        try await APIHarness.run { api in
            let (_, key) = try await api.createApp()
            let long = String(repeating: "k", count: 65)
            for path in ["/v1/features/\(long)", "/v1/features/a:b", "/v1/features/a@b"] {
                let reply = try await api.call(.put, path, key: key, json: #"{"requires": "whenInUse"}"#)
                #expect(reply.status == .unprocessableContent && reply.errorCode == "validationFailed", "\(path)")
            }
            let control = try await api.call(.put, "/v1/features/ok", key: key, json: #"{"requires": "whenInUse", "description": "a\u0000b"}"#)
            #expect(control.status == .unprocessableContent && control.errorCode == "validationFailed")
            let tooLong = try await api.call(
                .put, "/v1/features/ok", key: key, json: #"{"requires": "whenInUse", "description": "\#(String(repeating: "é", count: 501))"}"#)
            #expect(tooLong.status == .unprocessableContent)
            let fine = try await api.call(
                .put, "/v1/features/ok", key: key, json: #"{"requires": "whenInUse", "description": "\#(String(repeating: "é", count: 500))"}"#)
            #expect(fine.status == .created)
            #expect(try await api.call(.delete, "/v1/features/a%00b", key: key).status == .notFound)
        }
    }

    @Test("Events: a control character is 422 naming the field and the index, and nothing of the batch is stored")
    func eventStrings() async throws {
        try await APIHarness.run { api in
            let (_, key) = try await api.createApp()
            let cases: [(String, String)] = [
                (#"{"appVersion": "a\u0000b"}"#, "data.appVersion"),
                (#"{"appVersion": "\#(String(repeating: "é", count: 33))"}"#, "data.appVersion"),
                (#"{"usageDescriptions": ["NSLocation\u0007"]}"#, "data.usageDescriptions[0]"),
                (#"{"osVersion": "17.4.1.9"}"#, "data.osVersion"),
            ]
            for (data, field) in cases {
                let reply = try await api.append(key, [
                    eventJSON("authorizationRequested", #"{"request": "whenInUse"}"#, device: "strings"),
                    eventJSON("contextReported", data, device: "strings"),
                ])
                #expect(reply.status == .unprocessableContent && reply.errorCode == "validationFailed" && reply.errorIndex == 1, "\(data)")
                let message = (reply.json["error"] as? [String: Any])?["message"] as? String ?? ""
                #expect(message.hasPrefix(field), "\(message)")
            }
            let purpose = try await api.append(key, [
                eventJSON("authorizationRequested", #"{"request": "temporaryFullAccuracy", "purposeKey": "a\u0000"}"#, device: "strings"),
            ])
            #expect(purpose.status == .unprocessableContent && purpose.errorIndex == 0)
            let history = try await api.call(.get, "/v1/users/u-1/devices/strings/history", key: key)
            #expect(history.status == .ok && (history.json["entries"] as? [Any])?.isEmpty == true)
        }
    }
}
