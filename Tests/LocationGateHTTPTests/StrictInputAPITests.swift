import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import Testing

/// SPEC §14 "Strict input" through the whole router and a real database: each refusal names
/// the field (and the event), and what is refused is not stored.
@Suite("HTTP: strict input on the live router", .timeLimit(.minutes(2)))
struct StrictInputAPITests {
    static func message(_ reply: Reply) -> String {
        (reply.json["error"] as? [String: Any])?["message"] as? String ?? ""
    }

    /// An event of `device` with `extra` members between `occurredAt` and `type`.
    static func event(
        _ extra: String, device: String, data: String = #"{"state": "foreground"}"#, type: String = "appStateChanged",
        at time: String = "2026-11-22T10:00:00Z"
    ) -> String {
        #"{"id": "\#(UUID().uuidString)", "userId": "u-1", "deviceId": "\#(device)", "occurredAt": "\#(time)", \#(extra)"type": "\#(type)", "data": \#(data)}"#
    }

    /// A dashboard form posted with the session's cookie from the server's own origin.
    static func post(_ api: APIClient, _ path: String, form: String, session: String?) async throws -> Reply {
        var headers: HTTPFields = [.origin: DashboardSessionTests.ownOrigin, .contentType: "application/x-www-form-urlencoded"]
        if let session { headers[.cookie] = "locgate_session=\(session)" }
        return try await api.client.execute(uri: path, method: .post, headers: headers, body: ByteBuffer(string: form)) { response in
            Reply(status: response.status, headers: response.headers, body: Data(response.body.readableBytesView))
        }
    }

    /// A dashboard session of `key`.
    static func session(_ api: APIClient, key: String) async throws -> String {
        let reply = try await DashboardSessionTests.signIn(api, key: key, origin: DashboardSessionTests.ownOrigin)
        return try #require(DashboardSessionTests.cookie(reply)?.value)
    }

    @Test("A misspelt expectedVersion is a 422 naming it and its event, nothing stored; spelt right, the append is conditional")
    func misspeltExpectedVersion() async throws {
        try await APIHarness.run { api in
            let (_, key) = try await api.createApp()
            let first = Self.event("", device: "strict")
            let misspelt = Self.event(#""expectedVerison": 5, "#, device: "strict", data: #"{"state": "background"}"#, at: "2026-11-22T10:00:01Z")
            let refused = try await api.append(key, [first, misspelt])
            #expect(refused.status == .unprocessableContent && refused.errorCode == "validationFailed" && refused.errorIndex == 1, "\(refused.text)")
            #expect(Self.message(refused).hasPrefix("expectedVerison:"), "\(refused.text)")
            let none = try await api.call(.get, "/v1/users/u-1/devices/strict/history", key: key)
            #expect((none.json["entries"] as? [Any])?.isEmpty == true, "a refused batch stores nothing")
            let conditional = try await api.append(key, [first, misspelt.replacingOccurrences(of: "expectedVerison", with: "expectedVersion")])
            #expect(conditional.status == .conflict && conditional.errorCode == "versionConflict" && conditional.errorIndex == 1, "\(conditional.text)")
            // A field `data` does not know is still ignored, and not stored.
            let newer = try await api.append(key, [Self.event("", device: "strict", data: #"{"state": "foreground", "mood": "sunny"}"#)])
            #expect(newer.status == .ok, "\(newer.text)")
            let history = try await api.call(.get, "/v1/users/u-1/devices/strict/history", key: key)
            let data = ((history.json["entries"] as? [[String: Any]])?.first?["data"] as? [String: Any]) ?? [:]
            #expect(data["state"] as? String == "foreground" && data["mood"] == nil, "\(history.text)")
        }
    }

    @Test("A name twice in any body is a 400 invalidRequest naming it: events (either reader), apps, features, gate queries, OFREP")
    func repeatedNames() async throws {
        try await APIHarness.run { api in
            let (_, key) = try await api.createApp()
            let fast = try await api.append(key, [Self.event("", device: "twice", data: #"{"state": "foreground", "state": "background"}"#)])
            #expect(fast.status == .badRequest && fast.errorCode == "invalidRequest" && fast.errorIndex == 0, "\(fast.text)")
            #expect(Self.message(fast).hasPrefix("data.state: given twice"), "\(fast.text)")
            let slow = try await api.append(key, [
                Self.event("", device: "twice"),
                Self.event("", device: "twice", data: #"{"platform": "iOS", "appVersion": "2.0", "appVersion": "3.0"}"#, type: "contextReported"),
            ])
            #expect(slow.status == .badRequest && slow.errorIndex == 1 && Self.message(slow).hasPrefix("data.appVersion: given twice"), "\(slow.text)")
            let history = try await api.call(.get, "/v1/users/u-1/devices/twice/history", key: key)
            #expect((history.json["entries"] as? [Any])?.isEmpty == true)
            let app = try await api.call(.post, "/v1/apps", key: APIHarness.adminToken, json: #"{"name": "a", "name": "b"}"#)
            #expect(app.status == .badRequest && app.errorCode == "invalidRequest" && Self.message(app).hasPrefix("name: given twice"))
            let feature = try await api.call(.put, "/v1/features/twice", key: key, json: #"{"requires": "always", "requires": "whenInUse"}"#)
            #expect(feature.status == .badRequest && Self.message(feature).hasPrefix("requires: given twice"), "\(feature.text)")
            #expect(try await api.call(.get, "/v1/features/twice", key: key).status == .notFound)
            let query = try await api.call(
                .post, "/v1/gates/query", key: key, json: #"{"devices": [{"userId": "u", "deviceId": "d", "userId": "v"}]}"#)
            #expect(query.status == .badRequest && query.errorIndex == 0 && Self.message(query).hasPrefix("devices[0].userId: given twice"), "\(query.text)")
            let ofrep = try await api.call(
                .post, "/ofrep/v1/evaluate/flags", key: key, json: #"{"context": {"targetingKey": "u", "targetingKey": "v"}}"#)
            #expect(ofrep.status == .badRequest && ofrep.json["errorCode"] as? String == "INVALID_CONTEXT", "\(ofrep.text)")
            #expect((ofrep.json["errorDetails"] as? String)?.hasPrefix("context.targetingKey: given twice") == true)
        }
    }

    @Test("expectedVersion 1.5 is a 422 naming it and its event; 1.0 is 1 and 0.0 is 0")
    func integers() async throws {
        try await APIHarness.run { api in
            let (_, key) = try await api.createApp()
            let fraction = try await api.append(key, [Self.event("", device: "numbers"), Self.event(#""expectedVersion": 1.5, "#, device: "numbers")])
            #expect(fraction.status == .unprocessableContent && fraction.errorCode == "validationFailed" && fraction.errorIndex == 1, "\(fraction.text)")
            #expect(Self.message(fraction).hasPrefix("expectedVersion: must be an integer"), "\(fraction.text)")
            let zero = try await api.append(key, [Self.event(#""expectedVersion": 0.0, "#, device: "numbers")])
            #expect(zero.status == .ok, "\(zero.text)")
            let one = try await api.append(key, [Self.event(#""expectedVersion": 1.0, "#, device: "numbers", data: #"{"state": "background"}"#)])
            #expect(one.status == .ok, "\(one.text)")
            let stale = try await api.append(key, [Self.event(#""expectedVersion": 1.0, "#, device: "numbers")])
            #expect(stale.status == .conflict && stale.errorCode == "versionConflict", "1.0 is read as 1: \(stale.text)")
        }
    }

    @Test("A null where a value is due is a 422 naming it, nothing stored; null stays accepted where GET shows null")
    func nulls() async throws {
        try await APIHarness.run { api in
            let (appID, key) = try await api.createApp()
            for path in ["/v1/features/nearby", "/v1/features/nearby/preview"] {
                let method: HTTPRequest.Method = path.hasSuffix("preview") ? .post : .put
                let disabled = try await api.call(method, path, key: key, json: #"{"requires": "whenInUse", "disabled": null}"#)
                #expect(disabled.status == .unprocessableContent && disabled.errorCode == "validationFailed", "\(path): \(disabled.text)")
                #expect(Self.message(disabled).hasPrefix("disabled: must not be null"), "\(disabled.text)")
            }
            #expect(try await api.call(.get, "/v1/features/nearby", key: key).status == .notFound, "nothing stored")
            let floor = try await api.call(.put, "/v1/features/nearby", key: key, json: #"{"requires": "whenInUse", "minAppVersion": null}"#)
            #expect(floor.status == .created && floor.json["disabled"] as? Bool == false, "\(floor.text)")
            let retention = try await api.call(.put, "/v1/apps/\(appID)/retention", key: key, json: #"{"days": null}"#)
            #expect(retention.status == .ok, "\(retention.text)")
            let scope = try await api.call(.post, "/v1/keys", key: key, json: #"{"scope": "read", "deviceBound": null}"#)
            #expect(scope.status == .unprocessableContent && Self.message(scope).hasPrefix("deviceBound:"), "\(scope.text)")
            let version = try await api.append(key, [Self.event(#""expectedVersion": null, "#, device: "nulls")])
            #expect(version.status == .unprocessableContent && version.errorIndex == 0 && Self.message(version).hasPrefix("expectedVersion:"))
            let indicator = try await api.append(
                key, [Self.event("", device: "nulls", data: #"{"state": "background", "backgroundIndicator": null}"#)])
            #expect(indicator.status == .unprocessableContent && Self.message(indicator).hasPrefix("data.backgroundIndicator:"), "\(indicator.text)")
        }
    }

    @Test("A query parameter given twice is a 400 naming it on every address, before the key check, with or without a session")
    func repeatedQueryParameters() async throws {
        try await APIHarness.run { api in
            let (_, admin) = try await api.createApp()
            let read = try await api.createKey(admin, scope: "read")
            let session = try await Self.session(api, key: read)
            let addresses: [(HTTPRequest.Method, String, String)] = [
                (.get, "/v1/users/u-1/devices/d-1/gates?feature=a&feature=b", "feature"),
                (.post, "/v1/events?dryRun=1&dryRun=1", "dryRun"),
                (.get, "/v1/analytics/prompts?from=2026-01-01&from=2026-01-02", "from"),
                (.get, "/v1/features?limit=1&limit=2", "limit"),
                (.get, "/healthz?x=1&x=2", "x"),
                (.get, "/readyz?x&x", "x"),
                (.get, "/nope?x=1&x=1", "x"),
                (.get, "/dashboard/signin?next=a&next=b", "next"),
                (.post, "/dashboard/signout?x=1&x=2", "x"),
            ]
            for (method, path, name) in addresses {
                for key in [nil, read] {
                    let reply = try await api.call(method, path, key: key)
                    #expect(reply.status == .badRequest && reply.errorCode == "invalidRequest", "\(path) key \(key != nil): \(reply.text)")
                    #expect(Self.message(reply).hasPrefix("\(name): given twice"), "\(path): \(reply.text)")
                }
            }
            // The dashboard, signed out (no 303 to the sign-in form) and signed in.
            for cookie in [nil, session] {
                var headers: HTTPFields = [:]
                if let cookie { headers[.cookie] = "locgate_session=\(cookie)" }
                let page = try await api.call(.get, "/dashboard/prompts?groupBy=platform&groupBy=day", headers: headers)
                #expect(page.status == .badRequest && page.errorCode == "invalidRequest", "session \(cookie != nil): \(page.text)")
                #expect(Self.message(page).hasPrefix("groupBy: given twice"))
            }
            // OFREP: its own body, INVALID_CONTEXT, with or without a key.
            for key in [nil, read] {
                let flag = try await api.call(.post, "/ofrep/v1/evaluate/flags/nearby?x=1&x=1", key: key, json: "{}")
                #expect(flag.status == .badRequest && flag.json["errorCode"] as? String == "INVALID_CONTEXT", "\(flag.text)")
                #expect(flag.json["key"] as? String == "nearby" && flag.json["error"] == nil)
                let stream = try await api.call(.get, "/ofrep/v1/event-streams?targetingKey=u&targetingKey=v", key: key)
                #expect(stream.status == .badRequest && stream.json["errorCode"] as? String == "INVALID_CONTEXT", "\(stream.text)")
                #expect((stream.json["errorDetails"] as? String)?.hasPrefix("targetingKey: given twice") == true)
            }
            // Once each, the same addresses answer as before.
            #expect(try await api.call(.get, "/v1/users/u-1/devices/d-1/gates?feature=a").status == .unauthorized)
            #expect(try await api.call(.get, "/healthz?x=1").status == .ok)
        }
    }

    @Test("Analytics with from after to is a 422 naming from: the API and the dashboard's filters")
    func fromAfterTo() async throws {
        try await APIHarness.run { api in
            let (_, admin) = try await api.createApp()
            let read = try await api.createKey(admin, scope: "read")
            let reversed = try await api.call(.get, "/v1/analytics/prompts?from=2026-02-01&to=2026-01-01", key: read)
            #expect(reversed.status == .unprocessableContent && reversed.errorCode == "validationFailed", "\(reversed.text)")
            #expect(Self.message(reversed).hasPrefix("from:"))
            let session = try await Self.session(api, key: read)
            let headers: HTTPFields = [.cookie: "locgate_session=\(session)"]
            for page in ["/dashboard", "/dashboard/prompts", "/dashboard/escalation", "/dashboard/settings"] {
                let refused = try await api.call(.get, page + "?from=2026-02-01&to=2026-01-01", headers: headers)
                #expect(refused.status == .unprocessableContent, "\(page): \(refused.status)")
                #expect(refused.text.contains("from:"), "\(page)")
                let ordered = try await api.call(.get, page + "?from=2026-01-01&to=2026-02-01", headers: headers)
                #expect(ordered.status == .ok, "\(page): \(ordered.status)")
            }
        }
    }

    @Test("The dashboard's forms refuse an unknown or repeated field on the page, nothing saved")
    func dashboardForms() async throws {
        try await APIHarness.run { api in
            let (_, admin) = try await api.createApp()
            let session = try await Self.session(api, key: admin)
            let refusals: [(String, HTTPResponse.Status, String)] = [
                ("requires=always&enabled=false", .unprocessableContent, "enabled: not a field of this form"),
                ("requires=always&requires=whenInUse", .badRequest, "requires: given twice"),
                ("requires=always&services=visits", .unprocessableContent, "services: not a field of this form"),
                ("requires=always&services.visits=true&services.visits=true", .badRequest, "services.visits: given twice"),
                ("requires=always&disabled=maybe", .unprocessableContent, "disabled:"),
            ]
            for (form, status, message) in refusals {
                let reply = try await Self.post(api, "/dashboard/features/nearby", form: form, session: session)
                #expect(reply.status == status, "\(form): \(reply.status)")
                #expect(reply.text.contains(#"id="error""#) && reply.text.contains(message), "\(form)")
                #expect(try await api.call(.get, "/v1/features/nearby", key: admin).status == .notFound, "\(form): nothing saved")
            }
            // The Preview's GET reads its query as strictly.
            var cookie: HTTPFields = [:]
            cookie[.cookie] = "locgate_session=\(session)"
            let preview = try await api.call(.get, "/dashboard/features/nearby?preview=1&requires=always&colour=red", headers: cookie)
            #expect(preview.status == .unprocessableContent && preview.text.contains("colour: not a field of this form"), "\(preview.status)")
            // The form as the page sends it is saved.
            let saved = try await Self.post(
                api, "/dashboard/features/nearby", form: "preview=1&requires=always&services.visits=true&services.regionMonitoring=true"
                    + "&accuracy=any&delivery=locationManager&background=&description=Home&minAppVersion=", session: session)
            #expect(saved.status == .seeOther, "\(saved.text)")
            let stored = try await api.call(.get, "/v1/features/nearby", key: admin)
            #expect(stored.json["requires"] as? String == "always" && stored.json["services"] as? [String] == ["visits", "regionMonitoring"], "\(stored.text)")
            // The kill switch's form: one field.
            for form in ["disabled=true&force=1", "disabled=true&disabled=false"] {
                let reply = try await Self.post(api, "/dashboard/features/nearby/switch", form: form, session: session)
                #expect(reply.status == .unprocessableContent || reply.status == .badRequest, "\(form): \(reply.status)")
                let feature = try await api.call(.get, "/v1/features/nearby", key: admin)
                #expect(feature.json["disabled"] as? Bool == false, "\(form): nothing saved")
            }
            // Sign-in's form: one field, and no session from a refused one.
            let signIn = try await Self.post(api, "/dashboard/signin", form: "key=\(admin)&remember=1", session: nil)
            #expect(signIn.status == .unprocessableContent && DashboardSessionTests.cookie(signIn) == nil, "\(signIn.status)")
        }
    }
}
