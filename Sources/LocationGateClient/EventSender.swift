import Foundation
import LocationAuthorization

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Delivers the queue's events to `POST /v1/events`, oldest first, in batches, exactly once.
///
/// Exactly once is the product of three things: the queue keeps an event until the server's
/// 200 for it has been acknowledged on disk; a batch with no answer is sent again with the same
/// ids; and the server answers an id it already stored with `duplicate: true`, which counts as
/// delivered (SPEC §1). A crash of the app or the server between storing and answering costs a
/// duplicate answer, never a second copy or a lost event.
///
/// Only the server's own answers delete events: between a device and the server there may be
/// a captive portal, a proxy or a load balancer that answers in its stead.
///
/// - 2xx whose body is `{"results": [...]}` with one result per event sent, with the ids sent,
///   in order: every event of the batch is acknowledged (`duplicate: true` included).
/// - 429, 503 (and 408, other 5xx): the same batch again after Retry-After, or after
///   exponential backoff with full jitter (`RetryPolicy`). So is a failure with no answer, a
///   3xx (redirects are not followed), and a 2xx or 4xx whose body is not the server's.
/// - 400, 409, 413, 422 whose body is the server's error with a code that says the batch is
///   wrong (`malformedJSON`, `invalidRequest`, `versionConflict`, `idConflict`, `tooLarge`,
///   `validationFailed`, `ruleViolation`): a refusal that will not change. With `error.index`
///   that event is dropped and reported on `failures`, and the rest are sent; without one the
///   batch is halved until the culprit is named or alone.
/// - 403 `forbidden` naming an event: a device-bound key's token does not cover that event's
///   user or device; it is dropped and reported like a refused event.
/// - 401, 403 otherwise: stop with `DeliveryError.unauthorized`; a bad key (or an expired
///   device token) does not fix itself: the app fixes it and calls `flush()` again.
/// - The server's error with another 4xx (404, 405): stop with `DeliveryError.unexpectedStatus`.
///
/// One batch is in flight at a time, which keeps each device's events in order.
public actor EventSender {
    /// How the sender batches, waits and idles.
    public struct Configuration: Sendable, Hashable {
        /// Events per request; SPEC §5 allows 1,000, and smaller batches answer sooner.
        public var batchSize: Int
        public var retry: RetryPolicy
        /// How long `run()` waits between flushes once the queue is empty.
        public var interval: Duration

        public init(batchSize: Int = 100, retry: RetryPolicy = RetryPolicy(), interval: Duration = .seconds(15)) {
            self.batchSize = max(1, min(batchSize, 1000))
            self.retry = retry
            self.interval = interval
        }
    }

    public nonisolated let queue: EventQueue
    public nonisolated let configuration: Configuration
    /// Events the server refused for good and that were dropped from the queue, as they happen.
    /// Holds the latest 1,000 when nobody reads it.
    public nonisolated let failures: AsyncStream<DeliveryFailure>

    private let transport: any EventTransport
    /// Waits; `sleep` in the initializer.
    private let pause: @Sendable (Duration) async throws -> Void
    private let unitRandom: @Sendable () -> Double
    private let failureSink: AsyncStream<DeliveryFailure>.Continuation
    /// The drain in progress, which a second `flush()` joins instead of sending the same batch twice.
    private var draining: Task<FlushSummary, any Error>?

    /// - Parameters:
    ///   - sleep: waits before a retry and between `run()`'s flushes; tests record instead.
    ///   - unitRandom: the jitter, a number in 0...1; tests fix it.
    public init(
        queue: EventQueue,
        transport: any EventTransport,
        configuration: Configuration = Configuration(),
        sleep: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) },
        unitRandom: @escaping @Sendable () -> Double = { Double.random(in: 0...1) }
    ) {
        self.queue = queue
        self.transport = transport
        self.configuration = configuration
        self.pause = sleep
        self.unitRandom = unitRandom
        let (stream, continuation) = AsyncStream.makeStream(of: DeliveryFailure.self, bufferingPolicy: .bufferingNewest(1000))
        self.failures = stream
        self.failureSink = continuation
    }

    /// Sends to `{baseURL}/v1/events` with URLSession, authenticated with an `ingest` key.
    public init(
        queue: EventQueue, baseURL: URL, ingestKey: String, session: URLSession = .shared,
        configuration: Configuration = Configuration()
    ) {
        self.init(
            queue: queue, transport: URLSessionEventTransport(baseURL: baseURL, ingestKey: ingestKey, session: session),
            configuration: configuration)
    }

    deinit {
        failureSink.finish()
    }

    /// Sends until the queue is empty, retrying what can be retried for as long as it takes
    /// (cancel the task to give up; nothing is lost). Throws `DeliveryError` when the server
    /// refuses the key, `EventQueueError` when the queue's files fail, `CancellationError`.
    ///
    /// A call made while another is sending waits for that one (and gets its summary).
    @discardableResult
    public func flush() async throws -> FlushSummary {
        if let draining {
            return try await draining.value
        }
        let task = Task { try await self.drain() }
        draining = task
        defer { draining = nil }
        return try await withTaskCancellationHandler {
            try await task.value
        } onCancel: {
            task.cancel()
        }
    }

    /// Flushes, waits `configuration.interval`, and again, until the task is cancelled (then it
    /// returns) or the server refuses the key (then it throws). An app starts it once, in a
    /// `Task` that lives as long as the app, and may call `flush()` as well when it matters
    /// (entering the background, say).
    public func run() async throws {
        while !Task.isCancelled {
            do {
                try await flush()
                try await pause(configuration.interval)
            } catch is CancellationError {
                return
            }
        }
    }

    // MARK: - Sending

    private func drain() async throws -> FlushSummary {
        var summary = FlushSummary()
        var limit = configuration.batchSize
        var attempt = 0
        while true {
            try Task.checkCancellation()
            let batch = queue.pendingEvents(limit: limit)
            if batch.isEmpty { return summary }
            let outcome: DeliveryOutcome
            do {
                let answer = try await transport.send(Self.body(batch))
                outcome = DeliveryOutcome.classify(
                    status: answer.status, headers: answer.headers, body: answer.body, sent: batch.map(\.submission.id))
            } catch {
                if Task.isCancelled { throw CancellationError() }
                outcome = .retry(after: nil)
            }
            switch outcome {
            case .accepted(let duplicates):
                try queue.acknowledge(ids: batch.map(\.submission.id))
                summary.delivered += batch.count
                summary.duplicates += duplicates
                attempt = 0
                limit = configuration.batchSize
            case .retry(let retryAfter):
                let wait = retryAfter.map { min($0, configuration.retry.maximumRetryAfter) }
                    ?? configuration.retry.delay(attempt: attempt, unitRandom: unitRandom())
                attempt += 1
                summary.retries += 1
                try await pause(wait)
            case .refuseEvent(let index, let status, let code, let message):
                try reject(batch[index], status: status, code: code, message: message)
                summary.rejected += 1
                attempt = 0
            case .refuseBatch(let status, let code, let message):
                if batch.count > 1 {
                    // Halve until the server names the event or the batch is that event alone.
                    limit = batch.count / 2
                } else {
                    try reject(batch[0], status: status, code: code, message: message)
                    summary.rejected += 1
                    limit = configuration.batchSize
                }
                attempt = 0
            case .stop(let error):
                throw error
            }
        }
    }

    /// Drops a refused event from the queue (as acknowledged: the server has answered it for
    /// good) and reports it.
    private func reject(_ event: QueuedEvent, status: Int, code: String?, message: String) throws {
        try queue.acknowledge(ids: [event.submission.id])
        failureSink.yield(DeliveryFailure(submission: event.submission, status: status, code: code, message: message))
    }

    /// `{"events": [...]}` from the stored JSON of each event, byte for byte: a retry sends
    /// exactly what the first attempt sent.
    static func body(_ batch: [QueuedEvent]) -> Data {
        var body = Data(#"{"events":["#.utf8)
        for (position, event) in batch.enumerated() {
            if position > 0 { body.append(UInt8(ascii: ",")) }
            body.append(event.payload)
        }
        body.append(contentsOf: Array("]}".utf8))
        return body
    }
}
