import Foundation
import LocationAuthorization
@testable import LocationGateClient
import LocationGateTestKit
import Testing

/// The sender's rules (SPEC §5 statuses, §10 retries) against a scripted transport; waits are
/// recorded, not slept.
@Suite("EventSender: retries, backoff, duplicates, refusals", .timeLimit(.minutes(1)))
struct EventSenderTests {
    static let unavailable = #"{"error": {"code": "databaseUnavailable", "message": "PostgreSQL is unavailable"}}"#

    static func sender(
        _ queue: EventQueue, _ transport: ScriptedTransport, _ log: SleepLog,
        retry: RetryPolicy = RetryPolicy(), batchSize: Int = 100,
        unitRandom: @escaping @Sendable () -> Double = { 1 }
    ) -> EventSender {
        EventSender(
            queue: queue, transport: transport,
            configuration: EventSender.Configuration(batchSize: batchSize, retry: retry),
            sleep: { log.record($0) }, unitRandom: unitRandom)
    }

    static func close(_ seconds: [Double], _ expected: [Double]) -> Bool {
        seconds.count == expected.count && zip(seconds, expected).allSatisfy { abs($0 - $1) < 1e-9 }
    }

    @Test("429 and 503 with Retry-After wait exactly that long, then send the same batch", arguments: [503, 429])
    func retryAfter(status: Int) async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let (queue, stored) = try ClientFixtures.filledQueue(directory, count: 3)
        defer { queue.close() }
        let transport = ScriptedTransport([.answer(status: status, headers: ["Retry-After": "2"], body: Self.unavailable)])
        let log = SleepLog()
        let summary = try await Self.sender(queue, transport, log).flush()
        #expect(log.durations == [.seconds(2)])
        #expect(transport.requests == [stored.map(\.id), stored.map(\.id)])
        #expect(queue.isEmpty)
        #expect(summary.delivered == 3 && summary.retries == 1 && summary.duplicates == 0)
    }

    @Test("Without an answer or a Retry-After the windows double from the base up to the cap")
    func backoffGrows() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let (queue, stored) = try ClientFixtures.filledQueue(directory, count: 2)
        defer { queue.close() }
        let transport = ScriptedTransport([
            .noAnswer, .answer(status: 503, headers: [:], body: Self.unavailable), .noAnswer,
            .answer(status: 500, headers: [:], body: "{}"), .noAnswer, .noAnswer,
        ])
        let log = SleepLog()
        let retry = RetryPolicy(base: .milliseconds(500), cap: .seconds(4))
        try await Self.sender(queue, transport, log, retry: retry).flush()
        // unitRandom 1 picks the top of each window.
        #expect(Self.close(log.seconds, [0.5, 1, 2, 4, 4, 4]), "\(log.seconds)")
        // Every attempt carried the same ids: the server answers duplicates for any that landed.
        #expect(transport.requests.count == 7)
        #expect(transport.requests.allSatisfy { $0 == stored.map(\.id) })
        #expect(queue.isEmpty)
    }

    @Test("Full jitter: each wait is uniformly within 0 and its window, never the same fixed schedule")
    func jitter() async throws {
        let retry = RetryPolicy(base: .milliseconds(500), cap: .seconds(60))
        #expect(Self.close([0, 1, 2, 3, 7, 8, 20].map { RetryPolicy.seconds(retry.window(attempt: $0)) }, [0.5, 1, 2, 4, 60, 60, 60]))
        #expect(RetryPolicy.seconds(retry.delay(attempt: 2, unitRandom: 0.25)) == 0.5)

        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let (queue, _) = try ClientFixtures.filledQueue(directory, count: 1)
        defer { queue.close() }
        let transport = ScriptedTransport(Array(repeating: .noAnswer, count: 10))
        let log = SleepLog()
        try await Self.sender(queue, transport, log, retry: retry, unitRandom: { Double.random(in: 0...1) }).flush()
        let windows = (0..<10).map { RetryPolicy.seconds(retry.window(attempt: $0)) }
        #expect(log.seconds.count == 10)
        for (wait, window) in zip(log.seconds, windows) {
            #expect(wait >= 0 && wait <= window + 1e-9, "\(wait) outside 0...\(window)")
        }
        #expect(!Self.close(log.seconds, windows))
    }

    @Test("An answer of duplicate counts as delivered: acknowledged, not retried")
    func duplicatesAreDelivered() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let (queue, _) = try ClientFixtures.filledQueue(directory, count: 3)
        defer { queue.close() }
        let transport = ScriptedTransport([.acceptAll(duplicate: true)])
        let log = SleepLog()
        let summary = try await Self.sender(queue, transport, log).flush()
        #expect(summary.delivered == 3 && summary.duplicates == 3 && summary.retries == 0)
        #expect(transport.requests.count == 1)
        #expect(log.durations.isEmpty)
        #expect(queue.isEmpty)
    }

    @Test("A 422 naming an event drops that event alone, reports it, and sends the rest", arguments: [422, 409])
    func refusedEvent(status: Int) async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let (queue, stored) = try ClientFixtures.filledQueue(directory, count: 3)
        defer { queue.close() }
        let body = #"{"error": {"code": "ruleViolation", "message": "not offered", "index": 1}}"#
        let transport = ScriptedTransport([.answer(status: status, headers: [:], body: body)])
        let log = SleepLog()
        let sender = Self.sender(queue, transport, log)
        let summary = try await sender.flush()
        #expect(transport.requests == [stored.map(\.id), [stored[0].id, stored[2].id]])
        #expect(summary.rejected == 1 && summary.delivered == 2)
        #expect(queue.isEmpty)
        #expect(log.durations.isEmpty)
        var failures = sender.failures.makeAsyncIterator()
        let failure = await failures.next()
        #expect(failure?.submission == stored[1])
        #expect(failure?.status == status)
        #expect(failure?.code == "ruleViolation")
        #expect(failure?.message == "not offered")
    }

    @Test("A refusal naming no event halves the batch until the culprit is alone, then drops it")
    func refusedBatchNarrows() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let (queue, stored) = try ClientFixtures.filledQueue(directory, count: 4)
        defer { queue.close() }
        let tooLarge = #"{"error": {"code": "tooLarge", "message": "too large"}}"#
        let transport = ScriptedTransport([
            .answer(status: 413, headers: [:], body: tooLarge),  // all four
            .answer(status: 413, headers: [:], body: tooLarge),  // the first two
            .answer(status: 413, headers: [:], body: tooLarge),  // the first alone: dropped
        ])
        let log = SleepLog()
        let summary = try await Self.sender(queue, transport, log).flush()
        let ids = stored.map(\.id)
        #expect(transport.requests == [ids, Array(ids.prefix(2)), [ids[0]], Array(ids.suffix(3))])
        #expect(summary.rejected == 1 && summary.delivered == 3)
        #expect(queue.isEmpty)
    }

    @Test("401 and 403 stop the sender: nothing is dropped and nothing is retried", arguments: [401, 403])
    func badKeyStops(status: Int) async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let (queue, stored) = try ClientFixtures.filledQueue(directory, count: 3)
        defer { queue.close() }
        let transport = ScriptedTransport([
            .answer(status: status, headers: [:], body: #"{"error": {"code": "unauthorized", "message": "unknown key"}}"#),
        ])
        let log = SleepLog()
        do {
            try await Self.sender(queue, transport, log).flush()
            Issue.record("a refused key was not reported")
        } catch DeliveryError.unauthorized(let refused, let message) {
            #expect(refused == status)
            #expect(message == "unknown key")
        } catch {
            Issue.record("unexpected \(error)")
        }
        #expect(queue.pending() == stored)
        #expect(transport.requests.count == 1)
        #expect(log.durations.isEmpty)
    }

    @Test("The request body is the stored JSON of each event, which the server's decoder reads back")
    func body() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let (queue, stored) = try ClientFixtures.filledQueue(directory, count: 3)
        defer { queue.close() }
        let body = EventSender.body(queue.pendingEvents(limit: 10))
        struct Batch: Decodable {
            var events: [EventSubmission]
        }
        #expect(try JSONDecoder().decode(Batch.self, from: body).events == stored)
    }
}
