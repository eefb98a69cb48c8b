import Foundation
import LocationGateClient
import Synchronization

/// The real transport, except that once the server has accepted `threshold` events it crashes
/// the server right after its answer and loses that answer: the batch is stored but the sender
/// never hears so. The worst moment for exactly-once, made deterministic.
final class CrashingTransport: EventTransport {
    let inner: URLSessionEventTransport
    let threshold: Int
    let crash: @Sendable () -> Void
    private let state = Mutex((accepted: 0, crashing: false, crashed: false))

    init(inner: URLSessionEventTransport, threshold: Int, crash: @escaping @Sendable () -> Void) {
        self.inner = inner
        self.threshold = threshold
        self.crash = crash
    }

    /// Whether the crash has happened (the server is gone, not merely about to be).
    var crashed: Bool { state.withLock { $0.crashed } }

    func send(_ body: Data) async throws -> (status: Int, headers: [String: String], body: Data) {
        let answer = try await inner.send(body)
        let count = try Self.eventCount(in: body)
        let crashNow = state.withLock { state -> Bool in
            guard answer.status == 200, !state.crashing else { return false }
            state.accepted += count
            if state.accepted >= threshold {
                state.crashing = true
                return true
            }
            return false
        }
        if crashNow {
            crash()
            state.withLock { $0.crashed = true }
            throw URLError(.networkConnectionLost)
        }
        return answer
    }

    /// How many events with an `id` a `{"events": [...]}` body holds.
    private static func eventCount(in body: Data) throws -> Int {
        let object = try JSONSerialization.jsonObject(with: body) as? [String: Any]
        let events = object?["events"] as? [[String: Any]] ?? []
        return events.filter { event in (event["id"] as? String).flatMap { UUID(uuidString: $0) } != nil }.count
    }
}
