import Foundation
import HTTPTypes
@testable import LocationGateHTTP
import LocationGateService
import Testing

/// A push stream's place in the per-app and per-process caps is given back however the
/// stream ends, also when its response body never runs; and streams poll on schedules of
/// their own while LISTEN is down.
@Suite("Push stream slots and outage polling", .timeLimit(.minutes(1)))
struct StreamSlotTests {
    @Test("A response dropped before its body ran gives its slot back")
    func droppedResponseReleases() throws {
        let registry = StreamRegistry(maxPerApp: 2, maxTotal: 3, inactivity: .seconds(60))
        let app = UUID()
        do {
            let response = ServerSentEvents.response(registry: registry, slot: try registry.open(app)) { _ in true }
            #expect(registry.open == 1)
            _ = response
        }
        #expect(registry.open == 0, "a response that was never written kept its slot")
        // The app's cap counts from zero again: two streams fit.
        let first = try registry.open(app), second = try registry.open(app)
        #expect(throws: APIError.self) { try registry.open(app) }
        first.release()
        second.release()
        #expect(registry.open == 0)
    }

    @Test("A slot is released once however often release is called")
    func releasedOnce() throws {
        let registry = StreamRegistry(maxPerApp: 5, maxTotal: 5, inactivity: .seconds(60))
        let app = UUID(), other = UUID()
        let slot = try registry.open(app)
        let kept = try registry.open(other)
        slot.release()
        slot.release()
        #expect(registry.open == 1, "a second release freed another stream's place")
        kept.release()
    }

    @Test("The process cap is 503 overloaded, the app's cap 429, both with Retry-After")
    func caps() throws {
        let registry = StreamRegistry(maxPerApp: 1, maxTotal: 2, inactivity: .seconds(60))
        let a = UUID(), b = UUID(), c = UUID()
        let slots = [try registry.open(a), try registry.open(b)]
        #expect { try registry.open(c) } throws: { error in
            guard let error = error as? APIError else { return false }
            return error.status == .serviceUnavailable && error.retryAfter == 1
        }
        slots[0].release()
        #expect { try registry.open(b) } throws: { error in
            (error as? APIError)?.status == .tooManyRequests
        }
        slots[1].release()
    }

    @Test("Outage polls are 1 to 2 s apart and spread, not in lockstep")
    func outageSchedule() {
        let now = ContinuousClock.now
        let gaps = (0..<1000).map { _ in OutagePolling.next(after: now) - now }
        #expect(gaps.allSatisfy { $0 >= .seconds(1) && $0 <= .seconds(2) })
        #expect((gaps.min() ?? .zero) < .milliseconds(1100) && (gaps.max() ?? .zero) > .milliseconds(1900))
    }
}
