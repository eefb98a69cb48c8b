import Foundation
import HTTPTypes
import LocationGateService
import LocationGateTestSupport
import PostgresClient
import Testing

/// SPEC §14 "Guard rails" through the API, against a real PostgreSQL: an app keeps a live admin
/// key, audit ids and cursors tell nothing of other apps, and a key's dashboard sign-ins and
/// sessions are bounded.
@Suite("HTTP: guard rails (SPEC §14)", .timeLimit(.minutes(3)))
struct GuardRailTests {
    // MARK: - The last admin key

    @Test("The app's last live admin key cannot be revoked: 409 lastAdminKey, the key still works, nothing recorded")
    func lastAdminKey() async throws {
        try await APIHarness.run { api in
            let (_, admin, adminID) = try await AdminAuditTests.createApp(api)
            let read = try await api.call(.post, "/v1/keys", key: admin, json: #"{"scope": "read"}"#)
            let readID = try #require(read.json["id"] as? String)

            let refused = try await api.call(.delete, "/v1/keys/\(adminID)", key: admin)
            #expect(refused.status == .conflict && refused.errorCode == "lastAdminKey", "\(refused.text)")
            #expect(refused.text.contains("admin key"), "\(refused.text)")
            #expect(try await api.call(.get, "/v1/keys", key: admin).status == .ok, "the refused revocation revoked the key")
            // Other keys are revoked as before.
            #expect(try await api.call(.delete, "/v1/keys/\(readID)", key: admin).status == .noContent)

            // With another admin key, either may go, but not the last of them.
            let second = try await api.call(.post, "/v1/keys", key: admin, json: #"{"scope": "admin"}"#)
            let secondKey = try #require(second.json["key"] as? String)
            let secondID = try #require(second.json["id"] as? String)
            #expect(try await api.call(.delete, "/v1/keys/\(adminID)", key: secondKey).status == .noContent)
            let last = try await api.call(.delete, "/v1/keys/\(secondID)", key: secondKey)
            #expect(last.status == .conflict && last.errorCode == "lastAdminKey", "\(last.text)")

            let actions = try await AdminAuditTests.trail(api, secondKey).map(\.action)
            #expect(actions == ["appCreated", "keyCreated", "keyRevoked", "keyCreated", "keyRevoked"], "\(actions)")
        }
    }

    @Test("Two concurrent revocations of an app's last two admin keys: exactly one passes")
    func concurrentRevocations() async throws {
        try await APIHarness.runWithService { api, service in
            for _ in 0..<10 {
                let created = try await service.catalog.createApp(name: "two admins", actor: .adminToken)
                let second = try await service.catalog.createKey(appID: created.appID, scope: .admin, deviceBound: false, actor: .cli)
                let outcomes = try await withThrowingTaskGroup(of: String.self) { group in
                    for keyID in [created.keyID, second.id] {
                        group.addTask {
                            do throws(ServiceError) {
                                return try await service.catalog.revokeKey(appID: created.appID, keyID: keyID, actor: .cli) ? "revoked" : "none"
                            } catch {
                                return error.code.rawValue
                            }
                        }
                    }
                    var outcomes: [String] = []
                    for try await outcome in group { outcomes.append(outcome) }
                    return outcomes.sorted()
                }
                #expect(outcomes == ["lastAdminKey", "revoked"], "\(outcomes)")
                let live = try await service.catalog.listKeys(appID: created.appID).filter { $0.scope == .admin }
                #expect(live.count == 1, "\(live)")
            }
        }
    }

    // MARK: - Opaque audit ids

    @Test("Audit ids and next are random UUIDs: they tell nothing of other apps' activity, and another app's id is no cursor")
    func opaqueAuditIDs() async throws {
        try await APIHarness.run { api in
            let (_, first, _) = try await AdminAuditTests.createApp(api, name: "first")
            let (_, second, _) = try await AdminAuditTests.createApp(api, name: "second")
            _ = try await api.createKey(first, scope: "read")
            // Much activity in the second app between two entries of the first.
            for _ in 0..<20 { _ = try await api.createKey(second, scope: "read") }
            _ = try await api.createKey(first, scope: "read")

            let page = try await AdminAuditTests.page(api, first, "?limit=2")
            #expect(page.entries.count == 2)
            for entry in page.entries {
                #expect(UUID(uuidString: entry.id) != nil && entry.id == entry.id.lowercased(), "\(entry.id) is not an opaque id")
                #expect(Int(entry.id) == nil)
            }
            let next = try #require(page.next)
            #expect(next == page.entries.last?.id && UUID(uuidString: next) != nil, "\(next)")
            let rest = try await AdminAuditTests.page(api, first, "?after=\(next)")
            #expect(rest.entries.map(\.action) == ["keyCreated"] && rest.next == nil)

            // The first app's id is not a cursor into the second app's trail.
            let foreign = try await api.call(.get, "/v1/audit?after=\(next)", key: second)
            #expect(foreign.status == .unprocessableContent && foreign.errorCode == "validationFailed", "\(foreign.text)")
            #expect(foreign.text.contains("after"))
            #expect(!foreign.text.contains("keyCreated"), "\(foreign.text)")
        }
    }

    // MARK: - Dashboard sign-ins

    /// Moves the key's sign-ins out of the last minute, as if a minute had passed.
    static func age(signInsOf keyID: UUID, _ pool: PostgresConnectionPool) async throws {
        try await pool.query(
            """
            UPDATE admin_audit SET at = at - interval '61 seconds'
            WHERE actor_key_id = \(keyID) AND action = 'dashboardSignIn'
            """)
    }

    /// The key's sessions in the table, live or not yet deleted.
    static func sessionCount(of keyID: UUID, _ pool: PostgresConnectionPool) async throws -> Int64? {
        try await pool.query("SELECT count(*) FROM dashboard_sessions WHERE key_id = \(keyID)").first?.decode(0, as: Int64.self)
    }

    @Test("A key signs in at most 10 times in any 60 s: the 11th is 429 on the form with Retry-After, nothing started or recorded")
    func signInsAreLimited() async throws {
        try await APIHarness.runWithDatabase { api, _, pool in
            let (_, admin) = try await api.createApp()
            let created = try await api.call(.post, "/v1/keys", key: admin, json: #"{"scope": "read"}"#)
            let read = try #require(created.json["key"] as? String)
            let readID = try #require(created.json["id"] as? String)
            let readKeyID = try #require(UUID(uuidString: readID))
            for attempt in 0..<10 {
                let reply = try await DashboardSessionTests.signIn(api, key: read, origin: DashboardSessionTests.ownOrigin)
                #expect(reply.status == .seeOther, "sign-in \(attempt + 1): \(reply.status)")
            }
            let limited = try await DashboardSessionTests.signIn(api, key: read, origin: DashboardSessionTests.ownOrigin)
            #expect(limited.status == .tooManyRequests, "\(limited.status)")
            #expect(limited.text.contains("<form") && DashboardSessionTests.cookie(limited) == nil, "\(limited.text)")
            let retryAfter = Int(limited.headers[.retryAfter] ?? "") ?? 0
            #expect((1...60).contains(retryAfter), "Retry-After: \(limited.headers[.retryAfter] ?? "none")")
            // Another key of the app is not limited by this one's sign-ins.
            #expect(try await DashboardSessionTests.signIn(api, key: admin, origin: DashboardSessionTests.ownOrigin).status == .seeOther)

            let signIns = try await AdminAuditTests.trail(api, admin).filter { $0.action == "dashboardSignIn" && $0.target == readID }
            #expect(signIns.count == 10, "\(signIns.count) sign-ins recorded")
            #expect(try await Self.sessionCount(of: readKeyID, pool) == 10)

            // A minute on, the key signs in again.
            try await Self.age(signInsOf: readKeyID, pool)
            #expect(try await DashboardSessionTests.signIn(api, key: read, origin: DashboardSessionTests.ownOrigin).status == .seeOther)
        }
    }

    @Test("Concurrent sign-ins of one key: exactly 10 pass in a minute")
    func concurrentSignIns() async throws {
        try await APIHarness.run { api in
            let (_, admin) = try await api.createApp()
            let read = try await api.createKey(admin, scope: "read")
            let statuses = try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
                for _ in 0..<16 {
                    group.addTask { try await DashboardSessionTests.signIn(api, key: read, origin: DashboardSessionTests.ownOrigin).status }
                }
                var statuses: [HTTPResponse.Status] = []
                for try await status in group { statuses.append(status) }
                return statuses
            }
            #expect(statuses.filter { $0 == .seeOther }.count == 10, "\(statuses)")
            #expect(statuses.filter { $0 == .tooManyRequests }.count == 6, "\(statuses)")
        }
    }

    @Test("A key holds at most 20 live sessions: the 21st sign-in ends the oldest")
    func sessionsPerKeyAreBounded() async throws {
        try await APIHarness.runWithDatabase { api, _, pool in
            let (_, admin) = try await api.createApp()
            let created = try await api.call(.post, "/v1/keys", key: admin, json: #"{"scope": "read"}"#)
            let read = try #require(created.json["key"] as? String)
            let readID = try #require(UUID(uuidString: created.json["id"] as? String ?? ""))
            var sessions: [String] = []
            for index in 0..<21 {
                if index > 0, index % 10 == 0 { try await Self.age(signInsOf: readID, pool) }
                let reply = try await DashboardSessionTests.signIn(api, key: read, origin: DashboardSessionTests.ownOrigin)
                #expect(reply.status == .seeOther, "sign-in \(index + 1): \(reply.status)")
                sessions.append(try #require(DashboardSessionTests.cookie(reply)).value)
            }
            let oldest = try await DashboardSessionTests.page(api, "/dashboard/activity", session: sessions[0])
            #expect(oldest.status == .seeOther && oldest.headers[.location] == "/dashboard/signin", "the oldest session still signs in")
            for session in [sessions[1], sessions[20]] {
                #expect(try await DashboardSessionTests.page(api, "/dashboard/activity", session: session).status == .ok)
            }
            #expect(try await Self.sessionCount(of: readID, pool) == 20)
        }
    }
}
