import Foundation
import HTTPTypes
import Testing

@Suite("HTTP: apps and keys", .timeLimit(.minutes(2)))
struct AppsAndKeysTests {
    @Test("POST /v1/apps: 201 with the admin token; 401 without; 403 with an app key; 400 and 422 on bad bodies")
    func createApp() async throws {
        try await APIHarness.run { api in
            let (appID, adminKey) = try await api.createApp("Demo")
            #expect(UUID(uuidString: appID) != nil && adminKey.hasPrefix("lg_"))
            #expect(try await api.call(.post, "/v1/apps", json: #"{"name": "x"}"#).status == .unauthorized)
            #expect(try await api.call(.post, "/v1/apps", key: "wrong", json: #"{"name": "x"}"#).status == .unauthorized)
            let forbidden = try await api.call(.post, "/v1/apps", key: adminKey, json: #"{"name": "x"}"#)
            #expect(forbidden.status == .forbidden && forbidden.errorCode == "forbidden")
            let malformed = try await api.call(.post, "/v1/apps", key: APIHarness.adminToken, json: "{")
            #expect(malformed.status == .badRequest && malformed.errorCode == "malformedJSON")
            let missing = try await api.call(.post, "/v1/apps", key: APIHarness.adminToken, json: "{}")
            #expect(missing.status == .badRequest && missing.errorCode == "invalidRequest")
            let empty = try await api.call(.post, "/v1/apps", key: APIHarness.adminToken, json: #"{"name": ""}"#)
            #expect(empty.status == .unprocessableContent && empty.errorCode == "validationFailed")
            // The admin token reaches no app's data.
            #expect(try await api.call(.get, "/v1/features", key: APIHarness.adminToken).status == .forbidden)
        }
    }

    @Test("Keys: each scope reaches what it may and is refused the rest (403)")
    func scopes() async throws {
        try await APIHarness.run { api in
            let (_, admin) = try await api.createApp()
            let ingest = try await api.createKey(admin, scope: "ingest")
            let read = try await api.createKey(admin, scope: "read")
            let event = eventJSON("locationServicesChanged", #"{"enabled": true}"#)
            #expect(try await api.append(ingest, [event]).status == .ok)
            #expect(try await api.append(read, [eventJSON("locationServicesChanged", #"{"enabled": true}"#)]).status == .forbidden)
            #expect(try await api.call(.get, "/v1/users/u-1/devices/d-1/gates", key: ingest).status == .forbidden)
            #expect(try await api.call(.get, "/v1/users/u-1/devices/d-1/gates", key: read).status == .ok)
            #expect(try await api.call(.put, "/v1/features/f", key: read, json: #"{"requires": "always"}"#).status == .forbidden)
            #expect(try await api.call(.post, "/v1/keys", key: read, json: #"{"scope": "admin"}"#).status == .forbidden)
            let badScope = try await api.call(.post, "/v1/keys", key: admin, json: #"{"scope": "root"}"#)
            #expect(badScope.status == .unprocessableContent && badScope.errorCode == "validationFailed")
        }
    }

    @Test("DELETE /v1/keys/{id}: 204, the key stops working; 404 for unknown or another app's key")
    func revoke() async throws {
        try await APIHarness.run { api in
            let (_, admin) = try await api.createApp()
            let created = try await api.call(.post, "/v1/keys", key: admin, json: #"{"scope": "read"}"#)
            let id = created.json["id"] as? String ?? ""
            let key = created.json["key"] as? String ?? ""
            #expect(try await api.call(.get, "/v1/features", key: key).status == .ok)
            let (_, otherAdmin) = try await api.createApp("other")
            #expect(try await api.call(.delete, "/v1/keys/\(id)", key: otherAdmin).status == .notFound)
            #expect(try await api.call(.delete, "/v1/keys/\(id)", key: admin).status == .noContent)
            #expect(try await api.call(.get, "/v1/features", key: key).status == .unauthorized)
            #expect(try await api.call(.delete, "/v1/keys/\(id)", key: admin).status == .notFound)
            #expect(try await api.call(.delete, "/v1/keys/not-a-uuid", key: admin).status == .notFound)
        }
    }
}
