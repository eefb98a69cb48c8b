import Foundation
import HTTPTypes
import HummingbirdTesting
import LocationGateHTTP
import NIOCore
import LocationGateTestSupport
import Testing

/// SPEC §8: the dashboard signs in with a server-side session, never the key; the two POSTs
/// need the server's own origin; a session ends at sign-out and with its key; `Secure` comes
/// from the configuration alone; pages are charged to the app's rate limit.
@Suite("Dashboard sessions", .timeLimit(.minutes(2)))
struct DashboardSessionTests {
    /// The router test client sends every request to `http://localhost`.
    static let ownOrigin = "http://localhost"

    /// `POST /dashboard/signin` with `key` as the form, from `origin`.
    static func signIn(_ api: APIClient, key: String, origin: String?, extra: HTTPFields = [:]) async throws -> Reply {
        var headers = extra
        headers[.contentType] = "application/x-www-form-urlencoded"
        if let origin { headers[.origin] = origin }
        return try await api.client.execute(
            uri: "/dashboard/signin", method: .post, headers: headers, body: .init(string: "key=\(key)")
        ) { response in
            Reply(status: response.status, headers: response.headers, body: Data((response.body ?? .init()).readableBytesView))
        }
    }

    /// The `locgate_session` value of a reply's Set-Cookie, with the whole header.
    static func cookie(_ reply: Reply) -> (value: String, header: String)? {
        guard let header = reply.headers[values: .setCookie].first(where: { $0.hasPrefix("locgate_session=") }) else { return nil }
        let value = header.dropFirst("locgate_session=".count).prefix { $0 != ";" }
        return (String(value), header)
    }

    static func page(_ api: APIClient, _ path: String, session: String?) async throws -> Reply {
        var headers: HTTPFields = [:]
        if let session { headers[.cookie] = "locgate_session=\(session)" }
        return try await api.call(.get, path, headers: headers)
    }

    static func signOut(_ api: APIClient, session: String, origin: String? = ownOrigin) async throws -> Reply {
        var headers: HTTPFields = [.cookie: "locgate_session=\(session)"]
        if let origin { headers[.origin] = origin }
        return try await api.call(.post, "/dashboard/signout", headers: headers)
    }

    @Test("A read key starts a session whose cookie is not the key; HttpOnly, SameSite=Strict, not Secure over http even with X-Forwarded-Proto")
    func signInStartsASession() async throws {
        try await APIHarness.run { api in
            let (_, admin) = try await api.createApp()
            let read = try await api.createKey(admin, scope: "read")
            let reply = try await Self.signIn(api, key: read, origin: Self.ownOrigin, extra: [HTTPField.Name("X-Forwarded-Proto")!: "https"])
            #expect(reply.status == .seeOther)
            #expect(reply.headers[.location] == "/dashboard")
            let cookie = try #require(Self.cookie(reply))
            #expect(cookie.value.count == 43 && cookie.value != read && !cookie.value.contains(read))
            #expect(cookie.header.contains("HttpOnly"))
            #expect(cookie.header.lowercased().contains("samesite=strict"))
            #expect(!cookie.header.contains("Secure"), "Secure must not follow a request header")
            #expect(try await Self.page(api, "/dashboard", session: cookie.value).status == .ok)
            // The key itself is not a session.
            #expect(try await Self.page(api, "/dashboard", session: read).status == .seeOther)
            #expect(try await Self.page(api, "/dashboard/features", session: nil).headers[.location] == "/dashboard/signin")
        }
    }

    @Test("Sign-in and sign-out without the server's own Origin are 403 forbidden, and start or end nothing")
    func originIsChecked() async throws {
        try await APIHarness.run { api in
            let (_, admin) = try await api.createApp()
            for origin in [nil, "https://evil.example", "null", "http://localhost:8081", "https://localhost", "http://localhost/dashboard"] as [String?] {
                let reply = try await Self.signIn(api, key: admin, origin: origin)
                #expect(reply.status == .forbidden && reply.errorCode == "forbidden", "\(origin ?? "none")")
                #expect(Self.cookie(reply) == nil)
            }
            let session = try #require(Self.cookie(try await Self.signIn(api, key: admin, origin: Self.ownOrigin))).value
            #expect(try await Self.signOut(api, session: session, origin: "https://evil.example").status == .forbidden)
            #expect(try await Self.page(api, "/dashboard", session: session).status == .ok, "a foreign sign-out ended the session")
        }
    }

    @Test("Sign-out ends the session on the server: the old cookie no longer signs in")
    func signOutEndsTheSession() async throws {
        try await APIHarness.run { api in
            let (_, admin) = try await api.createApp()
            let session = try #require(Self.cookie(try await Self.signIn(api, key: admin, origin: Self.ownOrigin))).value
            let out = try await Self.signOut(api, session: session)
            #expect(out.status == .seeOther && out.headers[.location] == "/dashboard/signin")
            #expect(Self.cookie(out)?.header.contains("Max-Age=0") == true)
            let replayed = try await Self.page(api, "/dashboard", session: session)
            #expect(replayed.status == .seeOther && replayed.headers[.location] == "/dashboard/signin")
        }
    }

    @Test("Revoking the key ends its sessions; ingest, unknown and revoked keys get 401 and the form")
    func revocationEndsSessions() async throws {
        try await APIHarness.run { api in
            let (_, admin) = try await api.createApp()
            let created = try await api.call(.post, "/v1/keys", key: admin, json: #"{"scope": "read"}"#)
            let read = created.json["key"] as? String ?? "", readID = created.json["id"] as? String ?? ""
            let session = try #require(Self.cookie(try await Self.signIn(api, key: read, origin: Self.ownOrigin))).value
            #expect(try await Self.page(api, "/dashboard/prompts", session: session).status == .ok)
            #expect(try await api.call(.delete, "/v1/keys/\(readID)", key: admin).status == .noContent)
            #expect(try await Self.page(api, "/dashboard/prompts", session: session).status == .seeOther)
            let ingest = try await api.createKey(admin, scope: "ingest")
            for key in [read, ingest, "lg_unknown"] {
                let refused = try await Self.signIn(api, key: key, origin: Self.ownOrigin)
                #expect(refused.status == .unauthorized && Self.cookie(refused) == nil, "\(key)")
                #expect(refused.text.contains("<form"))
            }
        }
    }

    @Test("An https LOCGATE_PUBLIC_URL makes the cookie Secure and its origin is accepted")
    func publicURL() async throws {
        try await APIHarness.run(configure: { $0.publicURL = URL(string: "https://gate.example.com/") }) { api in
            let (_, admin) = try await api.createApp()
            let reply = try await Self.signIn(api, key: admin, origin: "https://gate.example.com")
            #expect(reply.status == .seeOther)
            #expect(Self.cookie(reply)?.header.contains("Secure") == true)
            #expect(try await Self.signIn(api, key: admin, origin: "http://gate.example.com").status == .forbidden)
        }
    }

    @Test("Dashboard pages are charged to the app's rate limit")
    func rateLimited() async throws {
        // A burst of 3 and a refill of one request in 1,000 s: independent of the test's pace.
        try await APIHarness.run(rateLimit: 0.001, configure: { $0.rateLimitBurst = 3 }) { api in
            let (_, admin) = try await api.createApp()
            let session = try #require(Self.cookie(try await Self.signIn(api, key: admin, origin: Self.ownOrigin))).value
            var statuses: [HTTPResponse.Status] = []
            for _ in 0..<10 { statuses.append(try await Self.page(api, "/dashboard/settings", session: session).status) }
            // The sign-in took one request of the burst, the first two pages the rest.
            #expect(statuses.prefix(2).allSatisfy { $0 == .ok } && statuses.dropFirst(2).allSatisfy { $0 == .tooManyRequests }, "\(statuses)")
        }
    }

    @Test("Failed sign-ins count as failed authentications: past the burst an invalid key, once checked, is answered 429")
    func failedSignInsAreThrottled() async throws {
        try await APIHarness.run(configure: { $0.failedAuthenticationRate = 0.001; $0.failedAuthenticationBurst = 5 }) { api in
            let (_, admin) = try await api.createApp()
            #expect(try await api.call(.get, "/v1/features", key: admin).status == .ok)  // verified: cached
            var statuses: [HTTPResponse.Status] = []
            for attempt in 0..<8 {
                let guess = "lg_" + String(format: "%043d", attempt)
                statuses.append(try await Self.signIn(api, key: guess, origin: Self.ownOrigin).status)
            }
            #expect(statuses.prefix(5).allSatisfy { $0 == .unauthorized } && statuses.dropFirst(5).allSatisfy { $0 == .tooManyRequests }, "\(statuses)")
            // The API's guesses share the budget, and a verified key still signs in.
            #expect(try await api.call(.get, "/v1/features", key: "lg_" + String(repeating: "9", count: 43)).status == .tooManyRequests)
            #expect(try await Self.signIn(api, key: admin, origin: Self.ownOrigin).status == .seeOther)
        }
    }
}
