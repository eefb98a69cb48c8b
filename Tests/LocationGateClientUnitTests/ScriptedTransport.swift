import Foundation
import LocationGateClient
import Synchronization

/// A scripted server: each request gets the next step's answer; once the script runs out,
/// every event is accepted. It records the ids of every request it was sent.
final class ScriptedTransport: EventTransport {
    enum Step: Sendable {
        case answer(status: Int, headers: [String: String], body: String)
        /// No HTTP answer at all: a refused connection, a timeout.
        case noAnswer
        case acceptAll(duplicate: Bool)
    }

    struct NoAnswer: Error {}

    private let script: Mutex<[Step]>
    private let sent = Mutex<[[UUID]]>([])

    init(_ steps: [Step]) {
        script = Mutex(steps)
    }

    /// The ids of each request, in order.
    var requests: [[UUID]] { sent.withLock { $0 } }

    func send(_ body: Data) async throws -> (status: Int, headers: [String: String], body: Data) {
        let ids = try Self.ids(in: body)
        sent.withLock { $0.append(ids) }
        let step = script.withLock { steps -> Step in
            steps.isEmpty ? .acceptAll(duplicate: false) : steps.removeFirst()
        }
        switch step {
        case .noAnswer:
            throw NoAnswer()
        case .answer(let status, let headers, let text):
            return (status, headers, Data(text.utf8))
        case .acceptAll(let duplicate):
            let results = ids.map { #"{"id": "\#($0.uuidString.lowercased())", "duplicate": \#(duplicate)}"# }
            return (200, [:], Data(#"{"results": [\#(results.joined(separator: ", "))]}"#.utf8))
        }
    }

    /// The `id`s of a `{"events": [...]}` body.
    static func ids(in body: Data) throws -> [UUID] {
        let object = try JSONSerialization.jsonObject(with: body) as? [String: Any]
        let events = object?["events"] as? [[String: Any]] ?? []
        return events.compactMap { event in (event["id"] as? String).flatMap { UUID(uuidString: $0) } }
    }
}

/// Records the sender's waits instead of waiting.
final class SleepLog: Sendable {
    private let log = Mutex<[Duration]>([])

    var durations: [Duration] { log.withLock { $0 } }

    var seconds: [Double] {
        durations.map { Double($0.components.seconds) + Double($0.components.attoseconds) / 1e18 }
    }

    func record(_ duration: Duration) {
        log.withLock { $0.append(duration) }
    }
}
