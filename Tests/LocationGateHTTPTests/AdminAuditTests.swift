import Crypto
import Foundation
import HTTPTypes
import LocationAuthorization
import LocationGateService
import LocationGateTestSupport
import PostgresClient
import Testing

/// SPEC §14 "Keys" and "Admin audit trail" through the API, against a real PostgreSQL: which
/// keys an app has (never a key or its hash), which app a key belongs to, and the trail of every
/// configuration change, written in the change's own transaction, paged, naming no one, and
/// kept through an erasure.
@Suite("Keys and the admin audit trail", .timeLimit(.minutes(3)))
struct AdminAuditTests {
    /// An entry of `GET /v1/audit` as the API writes it.
    struct Entry: Decodable, Equatable {
        /// Opaque: a random UUID, never a position.
        var id: String
        var at: String
        var actor: [String: AuditDetail]
        var action: String
        var target: String?
        var details: [String: AuditDetail]
    }

    struct Page: Decodable {
        var entries: [Entry]
        var next: String?
    }

    /// A new app through the API: its id, its admin key and that key's id.
    static func createApp(_ api: APIClient, name: String = "Audited") async throws -> (appID: String, admin: String, keyID: String) {
        let reply = try await api.call(.post, "/v1/apps", key: APIHarness.adminToken, json: #"{"name": "\#(name)"}"#)
        #expect(reply.status == .created, "\(reply.text)")
        return (reply.json["appId"] as? String ?? "", reply.json["apiKey"] as? String ?? "", reply.json["keyId"] as? String ?? "")
    }

    /// One page of the trail.
    static func page(_ api: APIClient, _ key: String, _ query: String = "") async throws -> Page {
        let reply = try await api.call(.get, "/v1/audit" + query, key: key)
        #expect(reply.status == .ok, "\(reply.text)")
        return try JSONDecoder().decode(Page.self, from: reply.body)
    }

    /// The whole trail of the key's app, a page at a time.
    static func trail(_ api: APIClient, _ key: String) async throws -> [Entry] {
        var entries: [Entry] = []
        var query = "?limit=1000"
        while true {
            let page = try await Self.page(api, key, query)
            entries += page.entries
            guard let next = page.next else { return entries }
            query = "?after=\(next)&limit=1000"
        }
    }

    /// One field's entry of `details.changes`: `{"from", "to"}`, nil as null.
    static func change(_ from: AuditDetail?, _ to: AuditDetail?) -> AuditDetail {
        .object(["from": from ?? .null, "to": to ?? .null])
    }

    /// Hex SHA-256, as the server stores keys.
    static func sha256(_ text: String) -> String {
        SHA256.hash(data: Data(text.utf8)).map { byte in
            let digits = Array("0123456789abcdef")
            return String([digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]])
        }.joined()
    }

    // MARK: - Keys

    @Test("POST /v1/apps answers keyId, the admin key's id: listed by GET /v1/keys and revocable")
    func createAppAnswersKeyID() async throws {
        try await APIHarness.run { api in
            let (_, admin, keyID) = try await Self.createApp(api)
            #expect(UUID(uuidString: keyID) != nil && keyID == keyID.lowercased(), "\(keyID)")
            let listed = try await api.call(.get, "/v1/keys", key: admin)
            let ids = (listed.json["keys"] as? [[String: Any]] ?? []).map { $0["id"] as? String ?? "" }
            #expect(ids == [keyID])
            let second = try await api.createKey(admin, scope: "admin")
            #expect(try await api.call(.delete, "/v1/keys/\(keyID)", key: second).status == .noContent)
            #expect(try await api.call(.get, "/v1/keys", key: admin).status == .unauthorized, "the revoked admin key still works")
        }
    }

    @Test("GET /v1/keys: the app's live keys with id, scope, deviceBound, createdAt, lastUsedAt, prefix; never a key or its hash; admin only")
    func listKeys() async throws {
        try await APIHarness.run { api in
            let (_, admin, adminID) = try await Self.createApp(api)
            let read = try await api.createKey(admin, scope: "read")
            let bound = try await api.call(.post, "/v1/keys", key: admin, json: #"{"scope": "ingest", "deviceBound": true}"#)
            let boundID = try #require(bound.json["id"] as? String)
            let boundKey = try #require(bound.json["key"] as? String)
            let revoked = try await api.call(.post, "/v1/keys", key: admin, json: #"{"scope": "ingest"}"#)
            let revokedID = try #require(revoked.json["id"] as? String)
            #expect(try await api.call(.delete, "/v1/keys/\(revokedID)", key: admin).status == .noContent)
            let (_, otherAdmin, otherID) = try await Self.createApp(api, name: "other")

            let reply = try await api.call(.get, "/v1/keys", key: admin)
            #expect(reply.status == .ok)
            let keys = try #require(reply.json["keys"] as? [[String: Any]])
            #expect(keys.count == 3, "\(reply.text)")
            for key in keys {
                #expect(Set(key.keys) == ["id", "scope", "deviceBound", "createdAt", "lastUsedAt", "prefix"], "\(key)")
                #expect(RFC3339.date(from: key["createdAt"] as? String ?? "") != nil, "\(key)")
                #expect((key["prefix"] as? String)?.hasPrefix("lg_") == true && (key["prefix"] as? String)?.count == 8, "\(key)")
            }
            #expect(keys.first?["id"] as? String == adminID, "oldest first")
            #expect(keys.map { $0["scope"] as? String ?? "" }.sorted() == ["admin", "ingest", "read"])
            #expect(!keys.contains { $0["id"] as? String == revokedID }, "a revoked key is listed")
            #expect(!keys.contains { $0["id"] as? String == otherID }, "another app's key is listed")
            let listedBound = try #require(keys.first { $0["id"] as? String == boundID })
            #expect(listedBound["scope"] as? String == "ingest" && listedBound["deviceBound"] as? Bool == true)
            #expect(listedBound["prefix"] as? String == String(boundKey.prefix(8)))
            #expect(keys.filter { $0["deviceBound"] as? Bool == false }.count == 2)
            for secret in [admin, read, boundKey, otherAdmin] {
                #expect(!reply.text.contains(String(secret.dropFirst(8))), "the listing holds a key")
                #expect(!reply.text.contains(Self.sha256(secret)), "the listing holds a key's hash")
            }
            #expect(!reply.text.contains("tokenSecret") && !reply.text.contains("lgs_"))

            #expect(try await api.call(.get, "/v1/keys", key: read).status == .forbidden)
            #expect(try await api.call(.get, "/v1/keys", key: APIHarness.adminToken).status == .forbidden)
            #expect(try await api.call(.get, "/v1/keys").status == .unauthorized)
        }
    }

    @Test("GET /v1/app: any key of the app learns its app and scope; the admin token and no key do not")
    func whichApp() async throws {
        try await APIHarness.run { api in
            let (appID, admin, _) = try await Self.createApp(api, name: "Trips")
            let read = try await api.createKey(admin, scope: "read")
            let ingest = try await api.createKey(admin, scope: "ingest")
            for (key, scope) in [(admin, "admin"), (read, "read"), (ingest, "ingest")] {
                let reply = try await api.call(.get, "/v1/app", key: key)
                #expect(reply.status == .ok, "\(scope): \(reply.text)")
                #expect(Set(reply.json.keys) == ["appId", "name", "scope"])
                #expect(reply.json["appId"] as? String == appID)
                #expect(reply.json["name"] as? String == "Trips")
                #expect(reply.json["scope"] as? String == scope)
            }
            #expect(try await api.call(.get, "/v1/app", key: APIHarness.adminToken).status == .forbidden)
            #expect(try await api.call(.get, "/v1/app").status == .unauthorized)
            #expect(try await api.call(.get, "/v1/app", key: "lg_" + String(repeating: "A", count: 43)).status == .unauthorized)
        }
    }

    @Test("lastUsedAt: null until the key is used, then the time of its use to a minute")
    func lastUsedAt() async throws {
        try await APIHarness.run { api in
            let (_, admin, _) = try await Self.createApp(api)
            let created = try await api.call(.post, "/v1/keys", key: admin, json: #"{"scope": "read"}"#)
            let id = try #require(created.json["id"] as? String)
            let key = try #require(created.json["key"] as? String)
            func listed() async throws -> [String: Any] {
                let keys = try await api.call(.get, "/v1/keys", key: admin).json["keys"] as? [[String: Any]] ?? []
                return keys.first { $0["id"] as? String == id } ?? [:]
            }
            #expect(try await listed()["lastUsedAt"] is NSNull, "a key never used has lastUsedAt null")
            let start = Date()
            for _ in 0..<20 { #expect(try await api.call(.get, "/v1/features", key: key).status == .ok) }
            #expect(try await waitUntil { try await listed()["lastUsedAt"] is String }, "lastUsedAt is still null after uses")
            let used = try #require(RFC3339.date(from: try await listed()["lastUsedAt"] as? String ?? ""))
            #expect(used > start.addingTimeInterval(-60) && used < Date().addingTimeInterval(60), "\(used) is not the time of the use")
        }
    }

    // MARK: - The trail

    @Test("Every change is recorded with its actor, target and details, oldest first, and no key, hash or person's id")
    func everyActionIsRecorded() async throws {
        try await APIHarness.runWithDatabase { api, _, pool in
            let (appID, admin, adminID) = try await Self.createApp(api)
            let createdRead = try await api.call(.post, "/v1/keys", key: admin, json: #"{"scope": "read"}"#)
            let readID = try #require(createdRead.json["id"] as? String)
            let readKey = try #require(createdRead.json["key"] as? String)
            #expect(try await api.call(.delete, "/v1/keys/\(readID)", key: admin).status == .noContent)
            #expect(try await api.call(.put, "/v1/features/nearby", key: admin, json: #"{"requires": "whenInUse"}"#).status == .created)
            #expect(try await api.call(.put, "/v1/features/nearby", key: admin, json: #"{"requires": "always"}"#).status == .ok)
            #expect(try await api.call(.delete, "/v1/features/nearby", key: admin).status == .noContent)
            #expect(try await api.call(.put, "/v1/apps/\(appID)/retention", key: admin, json: #"{"days": 30}"#).status == .ok)
            #expect(try await api.call(.put, "/v1/apps/\(appID)/retention", key: admin, json: #"{"days": null}"#).status == .ok)
            let person = "audited-person-" + UUID().uuidString.lowercased()
            let device = "audited-device-" + UUID().uuidString.lowercased()
            let appended = try await api.append(admin, [eventJSON("locationServicesChanged", #"{"enabled": true}"#, user: person, device: device)])
            #expect(appended.status == .ok, "\(appended.text)")
            let erasure = try await api.call(.delete, "/v1/users/\(person)", key: admin)
            #expect(erasure.status == .accepted)
            let erasureID = try #require(erasure.json["id"] as? String)
            let signIn = try await DashboardSessionTests.signIn(api, key: admin, origin: DashboardSessionTests.ownOrigin)
            let session = try #require(DashboardSessionTests.cookie(signIn)).value
            #expect(try await DashboardSessionTests.signOut(api, session: session).status == .seeOther)

            let reply = try await api.call(.get, "/v1/audit", key: admin)
            #expect(reply.status == .ok, "\(reply.text)")
            #expect(reply.text.contains(#""next":null"#), "next is written as null at the end")
            let entries = try JSONDecoder().decode(Page.self, from: reply.body).entries
            #expect(entries.map(\.action) == [
                "appCreated", "keyCreated", "keyRevoked", "featurePut", "featurePut", "featureDeleted", "retentionSet",
                "retentionSet", "erasureRequested", "dashboardSignIn", "dashboardSignOut",
            ])
            let byKey: [String: AuditDetail] = ["keyId": .string(adminID)]
            let actors: [[String: AuditDetail]] = [["adminToken": .bool(true)]] + Array(repeating: byKey, count: 10)
            #expect(entries.map(\.actor) == actors)
            let targets: [String?] = [appID, readID, readID, "nearby", "nearby", "nearby", appID, appID, erasureID, adminID, adminID]
            #expect(entries.map(\.target) == targets)
            let created: AuditDetail = .object([
                "requires": Self.change(nil, .string("whenInUse")), "services": Self.change(nil, .array([])),
                "accuracy": Self.change(nil, .string("any")), "delivery": Self.change(nil, .string("locationManager")),
                "background": Self.change(nil, .bool(false)), "disabled": Self.change(nil, .bool(false)),
            ])
            let replaced: AuditDetail = .object([
                "requires": Self.change(.string("whenInUse"), .string("always")), "background": Self.change(.bool(false), .bool(true)),
            ])
            let deleted: AuditDetail = .object([
                "requires": Self.change(.string("always"), nil), "services": Self.change(.array([]), nil),
                "accuracy": Self.change(.string("any"), nil), "delivery": Self.change(.string("locationManager"), nil),
                "background": Self.change(.bool(true), nil), "disabled": Self.change(.bool(false), nil),
            ])
            let details: [[String: AuditDetail]] = [
                ["name": .string("Audited"), "keyId": .string(adminID)],
                ["scope": .string("read"), "deviceBound": .bool(false)],
                ["scope": .string("read")],
                ["created": .bool(true), "changes": created],
                ["created": .bool(false), "changes": replaced],
                ["changes": deleted],
                ["days": .int(30)],
                ["days": .null],
                [:],
                ["scope": .string("admin")],
                [:],
            ]
            #expect(entries.map(\.details) == details)
            #expect(entries.allSatisfy { UUID(uuidString: $0.id) != nil && $0.id == $0.id.lowercased() }, "\(entries.map(\.id))")
            #expect(Set(entries.map(\.id)).count == entries.count)
            for entry in entries {
                #expect(RFC3339.date(from: entry.at) != nil, "\(entry.at)")
            }
            // No person's ids, no key and no hash of one: in the answer and in the table.
            for text in [person, device, String(admin.dropFirst(8)), String(readKey.dropFirst(8)), Self.sha256(admin), Self.sha256(readKey)] {
                #expect(!reply.text.contains(text), "the trail holds \(text)")
                let stored = try await pool.query(
                    """
                    SELECT count(*) FROM admin_audit
                    WHERE strpos(coalesce(target, '') || details::text, \(text)) > 0
                    """
                ).first?.decode(0, as: Int64.self)
                #expect(stored == 0, "admin_audit holds \(text)")
            }
            // Only the app's admin key reads its trail; another app's trail is its own.
            #expect(try await api.call(.get, "/v1/audit", key: APIHarness.adminToken).status == .forbidden)
            let (_, otherAdmin, _) = try await Self.createApp(api, name: "other")
            let other = try await Self.page(api, otherAdmin)
            #expect(other.entries.map(\.action) == ["appCreated"])
            let otherRead = try await api.createKey(otherAdmin, scope: "read")
            #expect(try await api.call(.get, "/v1/audit", key: otherRead).status == .forbidden)
        }
    }

    @Test("A PUT that flips a feature's disabled records featureDisabled or featureEnabled (SPEC §15); others featurePut")
    func killSwitchIsRecorded() async throws {
        try await APIHarness.run { api in
            let (_, admin, _) = try await Self.createApp(api)
            for body in [
                #"{"requires": "whenInUse"}"#, #"{"requires": "whenInUse", "disabled": true}"#,
                #"{"requires": "always", "disabled": true}"#, #"{"requires": "whenInUse", "disabled": false}"#,
            ] {
                let reply = try await api.call(.put, "/v1/features/nearby", key: admin, json: body)
                #expect(reply.status == .created || reply.status == .ok, "\(reply.text)")
            }
            let entries = try await Self.trail(api, admin)
            #expect(entries.map(\.action) == ["appCreated", "featurePut", "featureDisabled", "featurePut", "featureEnabled"])
            #expect(entries.dropFirst().allSatisfy { $0.target == "nearby" })
        }
    }

    @Test("Paging: oldest first from after, next until the end and null there; limit 100 by default, over 1,000 a 422 naming limit")
    func paging() async throws {
        try await APIHarness.run { api in
            let (_, admin, _) = try await Self.createApp(api)
            for _ in 0..<6 { _ = try await api.createKey(admin, scope: "read") }
            let all = try await Self.page(api, admin)
            #expect(all.entries.count == 7 && all.next == nil, "\(all.entries.map(\.action))")
            var pages: [[Entry]] = []
            var query = "?limit=3"
            while pages.count < 10 {
                let page = try await Self.page(api, admin, query)
                pages.append(page.entries)
                guard let next = page.next else { break }
                #expect(next == page.entries.last?.id)
                query = "?after=\(next)&limit=3"
            }
            #expect(pages.map(\.count) == [3, 3, 1])
            #expect(pages.flatMap { $0 } == all.entries)
            let exact = try await Self.page(api, admin, "?limit=7")
            #expect(exact.entries.count == 7 && exact.next == nil, "a page that ends the trail has next null")
            let beyond = try await Self.page(api, admin, "?after=\(all.entries.last?.id ?? "")")
            #expect(beyond.entries.isEmpty && beyond.next == nil)
            #expect(try await api.call(.get, "/v1/audit?limit=1000", key: admin).status == .ok)

            let tooMany = try await api.call(.get, "/v1/audit?limit=1001", key: admin)
            #expect(tooMany.status == .unprocessableContent && tooMany.errorCode == "validationFailed")
            #expect(tooMany.text.contains("limit"), "\(tooMany.text)")
            #expect(try await api.call(.get, "/v1/audit?limit=0", key: admin).status == .unprocessableContent)
            #expect(try await api.call(.get, "/v1/audit?limit=many", key: admin).errorCode == "invalidRequest")
            #expect(try await api.call(.get, "/v1/audit?after=-1", key: admin).errorCode == "invalidRequest")
            #expect(try await api.call(.get, "/v1/audit?after=0", key: admin).errorCode == "invalidRequest", "a position is no id")
            let unknown = try await api.call(.get, "/v1/audit?after=\(UUID().uuidString.lowercased())", key: admin)
            #expect(unknown.status == .unprocessableContent && unknown.text.contains("after"), "\(unknown.text)")
            let twice = try await api.call(.get, "/v1/audit?limit=2&limit=3", key: admin)
            #expect(twice.status == .badRequest && twice.text.contains("limit"), "\(twice.text)")
        }
    }

    @Test("A refused or failed change records nothing, and an entry that cannot be written takes its change with it")
    func sameTransaction() async throws {
        try await APIHarness.runWithDatabase(privateDatabase: "audit_atomic") { api, service, pool in
            let (appID, admin, _) = try await Self.createApp(api)
            try await api.putFeature(admin, "nearby", #"{"requires": "whenInUse"}"#)
            let recorded = try await Self.trail(api, admin)

            // Refused before anything changes.
            #expect(try await api.call(.post, "/v1/keys", key: admin, json: #"{"scope": "root"}"#).status == .unprocessableContent)
            #expect(try await api.call(.post, "/v1/keys", key: admin, json: #"{"scope": "read", "deviceBound": true}"#).status == .unprocessableContent)
            #expect(try await api.call(.delete, "/v1/keys/\(UUID().uuidString.lowercased())", key: admin).status == .notFound)
            #expect(try await api.call(.delete, "/v1/features/absent", key: admin).status == .notFound)
            #expect(try await api.call(.put, "/v1/features/x", key: admin, json: #"{"requires": "never"}"#).status == .unprocessableContent)
            #expect(try await api.call(.put, "/v1/apps/\(appID)/retention", key: admin, json: #"{"days": 0}"#).status == .unprocessableContent)
            #expect(try await api.call(.put, "/v1/apps/\(UUID().uuidString.lowercased())/retention", key: admin, json: #"{"days": 3}"#).status == .notFound)
            #expect(try await api.call(.delete, "/v1/users/not%20valid", key: admin).status == .unprocessableContent)
            // An erasure refused at the app's bound of pending erasures (inside its transaction).
            service.erasure.erasureSettings.maxPendingPerApp = 1
            #expect(try await api.call(.delete, "/v1/users/first-person", key: admin).status == .accepted)
            #expect(try await api.call(.delete, "/v1/users/second-person", key: admin).status == .tooManyRequests)
            let afterRefusals = try await Self.trail(api, admin)
            #expect(afterRefusals.dropLast() == recorded[...] && afterRefusals.last?.action == "erasureRequested",
                    "\(afterRefusals.map(\.action))")

            // The entry fails to be written: the feature is not deleted either.
            try await pool.withConnection { connection in
                try connection.execute(
                    """
                    CREATE FUNCTION refuse_feature_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
                    BEGIN
                        IF NEW.action = 'featureDeleted' THEN RAISE EXCEPTION 'refused by the test'; END IF;
                        RETURN NEW;
                    END
                    $$
                    """)
                try connection.execute(
                    "CREATE TRIGGER refuse_feature_deleted AFTER INSERT ON admin_audit FOR EACH ROW EXECUTE FUNCTION refuse_feature_deleted()")
            }
            let failed = try await api.call(.delete, "/v1/features/nearby", key: admin)
            #expect(failed.status == .internalServerError, "\(failed.text)")
            #expect(try await api.call(.get, "/v1/features/nearby", key: admin).status == .ok, "the change outlived its entry")
            #expect(try await Self.trail(api, admin) == afterRefusals)
        }
    }

    @Test("A person's erasure keeps the trail whole, and the trail never names the person")
    func erasureKeepsTheTrail() async throws {
        try await APIHarness.runWithDatabase(privateDatabase: "audit_erasure") { api, service, pool in
            let (_, admin, _) = try await Self.createApp(api)
            try await api.putFeature(admin, "nearby", #"{"requires": "whenInUse"}"#)
            _ = try await api.createKey(admin, scope: "read")
            let person = ErasureTests.personID()
            #expect(try await api.append(admin, ErasureTests.events(person, "phone")).status == .ok)
            let before = try await Self.trail(api, admin)

            let accepted = try await api.call(.delete, "/v1/users/\(person)", key: admin)
            #expect(accepted.status == .accepted)
            let id = try #require(accepted.json["id"] as? String)
            _ = try await ErasureTests.waitDone(api, service, admin, id)

            let after = try await Self.trail(api, admin)
            #expect(Array(after.prefix(before.count)) == before, "the erasure changed the trail")
            #expect(after.dropFirst(before.count).map(\.action) == ["erasureRequested"])
            #expect(after.last?.target == id && after.last?.details == [:])
            let naming = try await pool.query(
                "SELECT count(*) FROM admin_audit WHERE strpos(coalesce(target, '') || details::text, \(person)) > 0"
            ).first?.decode(0, as: Int64.self)
            #expect(naming == 0)
        }
    }

    // MARK: - The dashboard's Activity page

    @Test("The Activity page lists the trail newest first, escapes its texts, pages to older entries, downloads as CSV")
    func activityPage() async throws {
        try await APIHarness.run { api in
            let created = try await api.call(
                .post, "/v1/apps", key: APIHarness.adminToken, json: #"{"name": "\#(DashboardEscapingTests.hostileJSON)"}"#)
            #expect(created.status == .created, "\(created.text)")
            let admin = try #require(created.json["apiKey"] as? String)
            // 100 keys: with the app's creation and the sign-in, the trail takes two pages.
            for _ in 0..<100 { _ = try await api.createKey(admin, scope: "read") }
            let signIn = try await DashboardSessionTests.signIn(api, key: admin, origin: DashboardSessionTests.ownOrigin)
            let session = try #require(DashboardSessionTests.cookie(signIn)).value

            let first = try await DashboardSessionTests.page(api, "/dashboard/activity", session: session)
            #expect(first.status == .ok && first.headers[.contentType] == "text/html; charset=utf-8")
            #expect(first.text.contains(#"<a href="/dashboard/activity" class="active">Activity</a>"#))
            #expect(first.text.components(separatedBy: "<tr><td>").count - 1 == 100, "a page holds 100 entries")
            #expect(first.text.contains("dashboardSignIn") && first.text.contains("keyCreated"))
            #expect(!first.text.contains("appCreated"), "the oldest entry is on the second page")
            let signInAt = try #require(first.text.range(of: "dashboardSignIn"))
            let keyAt = try #require(first.text.range(of: "keyCreated"))
            #expect(signInAt.lowerBound < keyAt.lowerBound, "newest first")
            let marker = #"<p><a href="/dashboard/activity?before="#
            let link = try #require(first.text.range(of: marker))
            let before = String(first.text[link.upperBound...].prefix { $0.isHexDigit || $0 == "-" })
            #expect(UUID(uuidString: before) != nil, "\(before)")

            let second = try await DashboardSessionTests.page(api, "/dashboard/activity?before=\(before)", session: session)
            #expect(second.status == .ok)
            #expect(second.text.components(separatedBy: "<tr><td>").count - 1 == 2)
            #expect(second.text.contains("appCreated") && second.text.contains("admin token"))
            #expect(!second.text.contains(marker) && !second.text.contains("Older entries"), "no older entries")
            // The app's name, in appCreated's details, is text.
            #expect(!second.text.contains("<script") && !second.text.contains(#""1&2""#))
            #expect(second.text.contains(DashboardEscapingTests.escaped), "\(second.text)")

            let csv = try await DashboardSessionTests.page(api, "/dashboard/activity?before=\(before)&csv=activity", session: session)
            #expect(csv.status == .ok && csv.text.hasPrefix("at,action,by,target,details\r\n"), "\(csv.text)")
            #expect(csv.text.contains("appCreated"))

            #expect(try await DashboardSessionTests.page(api, "/dashboard/activity", session: nil).status == .seeOther)
            #expect(try await DashboardSessionTests.signOut(api, session: session).status == .seeOther)
            let last = try await Self.page(api, admin, "?limit=1000").entries.last
            #expect(last?.action == "dashboardSignOut")
        }
    }
}
