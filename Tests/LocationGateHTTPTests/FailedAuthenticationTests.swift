import Foundation
import HTTPTypes
import LocationGateHTTP
import LocationGateTestSupport
import Testing

/// Guessing keys or the admin token is throttled per process, without locking out any valid
/// key (verified before or not) or the admin token itself (SPEC §5 "Resources").
@Suite("Failed authentications are throttled", .timeLimit(.minutes(2)))
struct FailedAuthenticationTests {
    @Test("Past the burst of failed attempts an unknown token is 429 with Retry-After; a verified key and the admin token still work")
    func throttled() async throws {
        // A refill of one token in 1,000 s: the test does not depend on how fast it runs.
        try await APIHarness.run(configure: { $0.failedAuthenticationRate = 0.001; $0.failedAuthenticationBurst = 100 }) { api in
            let (_, admin) = try await api.createApp()
            #expect(try await api.call(.get, "/v1/features", key: admin).status == .ok)
            var statuses: [HTTPResponse.Status] = []
            for attempt in 0..<150 {
                let guess = "lg_" + String(format: "%043d", attempt)
                statuses.append(try await api.call(.get, "/v1/features", key: guess).status)
            }
            #expect(statuses.prefix(100).allSatisfy { $0 == .unauthorized })
            #expect(statuses.dropFirst(100).allSatisfy { $0 == .tooManyRequests }, "\(statuses.suffix(50))")
            let refused = try await api.call(.get, "/v1/features", key: "not-the-admin-token-guess")
            #expect(refused.status == .tooManyRequests && refused.errorCode == "rateLimited")
            #expect(refused.headers[.retryAfter] != nil)
            #expect(try await api.call(.get, "/v1/features", key: admin).status == .ok, "a verified key was locked out")
            let app = try await api.call(.post, "/v1/apps", key: APIHarness.adminToken, json: #"{"name": "still"}"#)
            #expect(app.status == .created, "the admin token was locked out")
        }
    }

    @Test("After 150 invalid keys from one address (everyone behind a proxy shares it), keys this process never verified are accepted: by the API, by OFREP and by the dashboard's sign-in")
    func validKeyAcceptedAfterGuesses() async throws {
        try await APIHarness.run(configure: { $0.failedAuthenticationRate = 0.001; $0.failedAuthenticationBurst = 100 }) { api in
            let (_, admin) = try await api.createApp()
            // Created, never presented: no process has verified them yet.
            let api1 = try await api.createKey(admin, scope: "read")
            let ofrep = try await api.createKey(admin, scope: "read")
            let dashboard = try await api.createKey(admin, scope: "read")
            var statuses: [HTTPResponse.Status] = []
            for attempt in 0..<150 {
                let guess = "lg_" + String(format: "%043d", attempt)
                statuses.append(try await api.call(.get, "/v1/features", key: guess).status)
            }
            #expect(statuses.dropFirst(100).allSatisfy { $0 == .tooManyRequests }, "the address's budget is spent")
            let first = try await api.call(.get, "/v1/features", key: api1)
            #expect(first.status == .ok, "a valid key was refused because of others' guesses: \(first.text)")
            let flags = try await api.call(
                .post, "/ofrep/v1/evaluate/flags", json: #"{"context": {"targetingKey": "u-1"}}"#,
                headers: [HTTPField.Name("X-API-Key")!: ofrep])
            #expect(flags.status == .ok, "\(flags.text)")
            let signIn = try await DashboardSessionTests.signIn(api, key: dashboard, origin: DashboardSessionTests.ownOrigin)
            #expect(signIn.status == .seeOther && DashboardSessionTests.cookie(signIn) != nil, "\(signIn.status)")
            // Guesses stay throttled meanwhile.
            let guess = try await api.call(.get, "/v1/features", key: "lg_" + String(repeating: "x", count: 43))
            #expect(guess.status == .tooManyRequests && guess.headers[.retryAfter] != nil)
            let wrongSignIn = try await DashboardSessionTests.signIn(
                api, key: "lg_" + String(repeating: "y", count: 43), origin: DashboardSessionTests.ownOrigin)
            #expect(wrongSignIn.status == .tooManyRequests)
        }
    }
}
