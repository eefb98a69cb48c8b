import Foundation
import LocationAuthorization
@testable import LocationGateClient
import LocationGateTestKit
import Synchronization
import Testing

/// Only the server's own answers delete events: a 2xx counts as delivered when its body is the
/// server's `{"results": [...]}` for the batch sent, and a 4xx drops events when its body is
/// the server's JSON error with a code that says the batch is wrong. Whatever else answers in
/// between (a captive portal, a proxy, a redirect) is retried with backoff, nothing deleted.
@Suite("EventSender: only the server's answers delete events", .timeLimit(.minutes(1)))
struct ServerAnswerTests {
    /// Answers that are not the server's, each with what old clients did wrong with it.
    enum Foreign: String, CaseIterable, Sendable {
        /// A captive portal's login page, served with 200 (after a redirect, or in place).
        case captivePortal200
        /// A 204 with no body.
        case empty204
        /// `{"results": []}` for a batch of 3.
        case emptyResults200
        /// One result per event, but with other ids.
        case otherIDs200
        /// The right ids, in another order.
        case reorderedIDs200
        /// Results for the first two of three.
        case missingResult200
        /// Some other JSON that happens to have `results`.
        case resultsWithoutIDs200
        /// A proxy's 413 page (its own body limit).
        case proxyTooLarge413
        /// A proxy's or WAF's 422 page.
        case proxyUnprocessable422
        /// A 400 with an empty body.
        case empty400
        /// A framework's JSON error, not the server's shape.
        case otherJSON400
        /// An error whose `code` is a number.
        case numericCode400
        /// The server's shape with a code that does not say the batch is wrong.
        case unknownCode400
        /// A 409 from something in between, as HTML.
        case proxyConflict409
        /// A redirect (to a captive portal), which the transport does not follow.
        case redirect302
        case redirect307
        /// A 404 page of something that is not the server.
        case html404

        var status: Int {
            switch self {
            case .captivePortal200, .emptyResults200, .otherIDs200, .reorderedIDs200, .missingResult200, .resultsWithoutIDs200: 200
            case .empty204: 204
            case .proxyTooLarge413: 413
            case .proxyUnprocessable422: 422
            case .empty400, .otherJSON400, .numericCode400, .unknownCode400: 400
            case .proxyConflict409: 409
            case .redirect302: 302
            case .redirect307: 307
            case .html404: 404
            }
        }

        var headers: [String: String] {
            switch self {
            case .redirect302, .redirect307: ["Location": "http://portal.example/login"]
            case .captivePortal200, .proxyTooLarge413, .proxyUnprocessable422, .proxyConflict409, .html404:
                ["Content-Type": "text/html"]
            default: [:]
            }
        }

        func body(for ids: [UUID]) -> String {
            func result(_ id: UUID) -> String { #"{"id": "\#(id.uuidString.lowercased())", "duplicate": false}"# }
            switch self {
            case .captivePortal200: return "<html><head><title>Wi-Fi</title></head><body><form>Accept the terms</form></body></html>"
            case .empty204, .empty400, .redirect302, .redirect307: return ""
            case .emptyResults200: return #"{"results": []}"#
            case .otherIDs200: return #"{"results": [\#(ids.map { _ in result(UUID()) }.joined(separator: ", "))]}"#
            case .reorderedIDs200: return #"{"results": [\#(ids.reversed().map(result).joined(separator: ", "))]}"#
            case .missingResult200: return #"{"results": [\#(ids.dropLast().map(result).joined(separator: ", "))]}"#
            case .resultsWithoutIDs200: return #"{"results": [{"ok": true}, {"ok": true}, {"ok": true}]}"#
            case .proxyTooLarge413: return "<html><body><h1>413 Request Entity Too Large</h1><hr>nginx</body></html>"
            case .proxyUnprocessable422: return "<html><body>Request blocked</body></html>"
            case .otherJSON400: return #"{"error": "Bad Request", "status": 400, "path": "/v1/events"}"#
            case .numericCode400: return #"{"error": {"code": 400, "message": "Bad Request", "index": 0}}"#
            case .unknownCode400: return #"{"error": {"code": "badRequest", "message": "Bad Request", "index": 0}}"#
            case .proxyConflict409: return "<html><body>Conflict</body></html>"
            case .html404: return "<html><body>Not Found</body></html>"
            }
        }
    }

    /// Records each wait of the sender and the ids the queue held at that moment.
    final class WaitWitness: Sendable {
        let queue: EventQueue
        private let state = Mutex<(waits: [Duration], pending: [[UUID]])>((waits: [], pending: []))

        init(queue: EventQueue) {
            self.queue = queue
        }

        func record(_ duration: Duration) {
            let pending = queue.pending().map(\.id)
            state.withLock {
                $0.waits.append(duration)
                $0.pending.append(pending)
            }
        }

        var seconds: [Double] { state.withLock { $0.waits.map(RetryPolicy.seconds) } }
        var pending: [[UUID]] { state.withLock { $0.pending } }
    }

    static func close(_ seconds: [Double], _ expected: [Double]) -> Bool {
        seconds.count == expected.count && zip(seconds, expected).allSatisfy { abs($0 - $1) < 1e-9 }
    }

    static func sender(_ queue: EventQueue, _ transport: ScriptedTransport, _ witness: WaitWitness) -> EventSender {
        EventSender(
            queue: queue, transport: transport,
            configuration: EventSender.Configuration(batchSize: 100, retry: RetryPolicy(base: .milliseconds(500), cap: .seconds(60))),
            sleep: { witness.record($0) }, unitRandom: { 1 })
    }

    @Test("An answer that is not the server's keeps every event queued; the same batch is sent again after backoff", arguments: Foreign.allCases)
    func foreignAnswerKeepsEvents(answer: Foreign) async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let (queue, stored) = try ClientFixtures.filledQueue(directory, count: 3)
        defer { queue.close() }
        let ids = stored.map(\.id)
        // Three such answers in a row, then the server itself.
        let step = ScriptedTransport.Step.answer(status: answer.status, headers: answer.headers, body: answer.body(for: ids))
        let transport = ScriptedTransport([step, step, step])
        let witness = WaitWitness(queue: queue)
        let sender = Self.sender(queue, transport, witness)

        let summary = try await sender.flush()

        // Every attempt carried the whole batch: nothing was dropped or narrowed down.
        #expect(transport.requests == Array(repeating: ids, count: 4))
        // Each wait came while the queue still held all three: nothing was deleted.
        #expect(witness.pending == Array(repeating: ids, count: 3))
        // Backoff, doubling (unitRandom 1 picks the top of each window).
        #expect(Self.close(witness.seconds, [0.5, 1, 2]), "\(witness.seconds)")
        #expect(summary.delivered == 3 && summary.rejected == 0 && summary.retries == 3)
        #expect(queue.isEmpty)
    }

    @Test("The server's 200 in its full form is delivered, duplicates counted; UUIDs in either case")
    func serverAnswerDelivers() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let (queue, stored) = try ClientFixtures.filledQueue(directory, count: 3)
        defer { queue.close() }
        var results: [String] = []
        for (position, submission) in stored.enumerated() {
            let id = position == 1 ? submission.id.uuidString.uppercased() : submission.id.uuidString.lowercased()
            let effects = #"[{"kind": "noEffect", "reason": "unchanged"}]"#
            let version = position + 1
            results.append(
                #"{"deviceId": "d-1", "duplicate": \#(position == 2), "effects": \#(effects), "id": "\#(id)", "status": "notDetermined", "userId": "u-1", "version": \#(version)}"#)
        }
        let body = #"{"results": [\#(results.joined(separator: ", "))]}"#
        let transport = ScriptedTransport([.answer(status: 200, headers: ["Content-Type": "application/json"], body: body)])
        let witness = WaitWitness(queue: queue)
        let summary = try await Self.sender(queue, transport, witness).flush()
        #expect(transport.requests == [stored.map(\.id)])
        #expect(summary.delivered == 3 && summary.duplicates == 1 && summary.retries == 0 && summary.rejected == 0)
        #expect(witness.seconds.isEmpty)
        #expect(queue.isEmpty)
    }

    @Test("The server's 422 validationFailed naming an event still drops that event alone and reports it")
    func serverValidationFailedDrops() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let (queue, stored) = try ClientFixtures.filledQueue(directory, count: 3)
        defer { queue.close() }
        let body = #"{"error": {"code": "validationFailed", "message": "data.state: must be foreground or background", "index": 2}}"#
        let transport = ScriptedTransport([.answer(status: 422, headers: ["Content-Type": "application/json"], body: body)])
        let witness = WaitWitness(queue: queue)
        let sender = Self.sender(queue, transport, witness)
        let summary = try await sender.flush()
        #expect(transport.requests == [stored.map(\.id), [stored[0].id, stored[1].id]])
        #expect(summary.rejected == 1 && summary.delivered == 2 && summary.retries == 0)
        #expect(witness.seconds.isEmpty)
        #expect(queue.isEmpty)
        var failures = sender.failures.makeAsyncIterator()
        let failure = await failures.next()
        #expect(failure?.submission == stored[2])
        #expect(failure?.status == 422)
        #expect(failure?.code == "validationFailed")
    }

    @Test("The server's 422 validationFailed naming no event still narrows the batch down and drops the culprit")
    func serverValidationFailedWithoutIndexNarrows() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let (queue, stored) = try ClientFixtures.filledQueue(directory, count: 2)
        defer { queue.close() }
        let body = #"{"error": {"code": "validationFailed", "message": "duplicate ids in the batch"}}"#
        let transport = ScriptedTransport([
            .answer(status: 422, headers: [:], body: body),  // both
            .answer(status: 422, headers: [:], body: body),  // the first alone: dropped
        ])
        let witness = WaitWitness(queue: queue)
        let summary = try await Self.sender(queue, transport, witness).flush()
        let ids = stored.map(\.id)
        #expect(transport.requests == [ids, [ids[0]], [ids[1]]])
        #expect(summary.rejected == 1 && summary.delivered == 1)
        #expect(queue.isEmpty)
    }

    @Test("The server's own 404 stops the sender (the base URL misses the API); nothing is dropped")
    func serverNotFoundStops() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let (queue, stored) = try ClientFixtures.filledQueue(directory, count: 2)
        defer { queue.close() }
        let transport = ScriptedTransport([
            .answer(status: 404, headers: [:], body: #"{"error": {"code": "notFound", "message": "no route /api/v1/events"}}"#),
        ])
        let witness = WaitWitness(queue: queue)
        do {
            try await Self.sender(queue, transport, witness).flush()
            Issue.record("the server's 404 did not stop the sender")
        } catch DeliveryError.unexpectedStatus(let status, let message) {
            #expect(status == 404)
            #expect(message == "no route /api/v1/events")
        }
        #expect(queue.pending() == stored)
    }

    @Test("Classification: what counts as the server's answer")
    func classification() {
        let ids = [UUID(), UUID()]
        func classify(_ status: Int, _ body: String, headers: [String: String] = [:]) -> DeliveryOutcome {
            DeliveryOutcome.classify(status: status, headers: headers, body: Data(body.utf8), sent: ids)
        }
        let results = #"{"results": [{"id": "\#(ids[0])", "duplicate": true}, {"id": "\#(ids[1])"}]}"#
        #expect(classify(200, results) == .accepted(duplicates: 1))
        #expect(classify(201, results) == .accepted(duplicates: 1))
        #expect(classify(200, #"{"results": [{"id": "\#(ids[0])"}]}"#) == .retry(after: nil))
        #expect(classify(200, #"{"results": [{"id": "\#(ids[0])"}, {"id": "\#(ids[1])", "duplicate": "yes"}]}"#) == .retry(after: nil))
        #expect(classify(200, "") == .retry(after: nil))
        #expect(classify(301, "", headers: ["Retry-After": "5"]) == .retry(after: nil))
        for (status, code) in [(400, "malformedJSON"), (400, "invalidRequest"), (409, "versionConflict"), (409, "idConflict"), (413, "tooLarge"), (422, "validationFailed"), (422, "ruleViolation")] {
            #expect(
                classify(status, #"{"error": {"code": "\#(code)", "message": "m", "index": 1}}"#)
                    == .refuseEvent(index: 1, status: status, code: code, message: "m"))
            #expect(classify(status, #"{"error": {"code": "\#(code)", "message": "m"}}"#) == .refuseBatch(status: status, code: code, message: "m"))
            #expect(classify(status, #"{"error": {"code": "\#(code)", "message": "m", "index": null}}"#) == .refuseBatch(status: status, code: code, message: "m"))
            // Without its message it is not the server's body.
            #expect(classify(status, #"{"error": {"code": "\#(code)"}}"#) == .retry(after: nil))
            #expect(classify(status, "<html>\(code)</html>") == .retry(after: nil))
        }
        #expect(classify(422, #"{"error": {"code": "unauthorized", "message": "m", "index": 0}}"#) == .retry(after: nil))
        #expect(classify(503, "<html>busy</html>", headers: ["Retry-After": "3"]) == .retry(after: .seconds(3)))
        #expect(classify(429, "", headers: ["retry-after": "7"]) == .retry(after: .seconds(7)))
        #expect(classify(401, "<html>login</html>") == .stop(.unauthorized(status: 401, message: "status 401")))
        #expect(classify(403, #"{"error": {"code": "forbidden", "message": "scope"}}"#) == .stop(.unauthorized(status: 403, message: "scope")))
        // A device-bound key's token that does not cover one event: that event alone is dropped.
        #expect(classify(403, #"{"error": {"code": "forbidden", "message": "m", "index": 1}}"#) == .refuseEvent(index: 1, status: 403, code: "forbidden", message: "m"))
        #expect(classify(403, #"{"error": {"code": "forbidden", "message": "m", "index": 5}}"#) == .stop(.unauthorized(status: 403, message: "m")))
        #expect(classify(405, "") == .retry(after: nil))
        #expect(classify(405, #"{"error": {"code": "methodNotAllowed", "message": "m"}}"#) == .stop(.unexpectedStatus(405, message: "m")))
    }
}
