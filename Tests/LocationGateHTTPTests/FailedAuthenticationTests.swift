import Foundation
import HTTPTypes
import LocationGateHTTP
import LocationGateTestSupport
import Testing

/// Guessing keys or the admin token is throttled per process, without locking out the keys
/// the process already trusts or the admin token itself.
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
}
