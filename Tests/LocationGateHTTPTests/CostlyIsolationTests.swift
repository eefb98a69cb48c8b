import Foundation
import HTTPTypes
import LocationGateTestSupport
import Testing

/// SPEC §5 "Resources" and §15: one app's previews never starve another app. An app runs at
/// most two previews at once (429 with Retry-After beyond), within a share of the pool, so
/// that another app's appends, gates and history keep answering without a 503.
@Suite("Costly requests: one app's previews never starve another's", .timeLimit(.minutes(3)))
struct CostlyIsolationTests {
    @Test("16 parallel previews of one app: at most two run, the rest 429 with Retry-After; the other app never sees a 503")
    func previewsDoNotStarveOthers() async throws {
        try await APIHarness.run { api in
            let (_, heavy) = try await api.createApp("heavy")
            let (_, other) = try await api.createApp("other")
            // Enough distinct states that a preview takes a while.
            for start in stride(from: 0, to: 10_000, by: 1000) {
                let events = (start..<start + 1000).map { index in
                    eventJSON("contextReported", #"{"platform": "iOS", "appVersion": "1.\#(index)"}"#, user: "u\(index)", device: "d")
                }
                #expect(try await api.append(heavy, events).status == .ok)
            }
            let body = #"{"requires": "whenInUse", "services": ["standard"], "minAppVersion": "1.5000"}"#
            async let previews: [Reply] = withThrowingTaskGroup(of: Reply.self) { group in
                for _ in 0..<16 {
                    group.addTask { try await api.call(.post, "/v1/features/nearby/preview", key: heavy, json: body) }
                }
                var replies: [Reply] = []
                for try await reply in group { replies.append(reply) }
                return replies
            }
            var otherStatuses: [HTTPResponse.Status] = []
            for index in 0..<20 {
                let appended = try await api.append(
                    other, [eventJSON("locationServicesChanged", #"{"enabled": \#(index % 2 == 0)}"#, user: "o", device: "p")])
                otherStatuses.append(appended.status)
                otherStatuses.append(try await api.call(.get, "/v1/users/o/devices/p/gates", key: other).status)
                otherStatuses.append(try await api.call(.get, "/v1/users/o/devices/p/history", key: other).status)
            }
            let replies = try await previews
            #expect(otherStatuses.allSatisfy { $0 == .ok }, "\(otherStatuses.filter { $0 != .ok })")
            #expect(replies.allSatisfy { $0.status == .ok || $0.status == .tooManyRequests }, "\(replies.map(\.status))")
            #expect(replies.contains { $0.status == .ok })
            for refused in replies where refused.status == .tooManyRequests {
                #expect(refused.errorCode == "rateLimited")
                #expect(refused.headers[.retryAfter] != nil)
            }
            // Once they are done, a preview runs again.
            #expect(try await api.call(.post, "/v1/features/nearby/preview", key: heavy, json: body).status == .ok)
        }
    }
}
