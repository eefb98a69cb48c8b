import Logging
import PostgresClient
import Synchronization

/// A reader that follows the global log: it catches up from a position in pages, then waits
/// for the append NOTIFY (or the poll interval) and reads again. Pull-based: a slow consumer
/// slows the reads, nothing piles up in memory.
///
///     for try await event in log.subscribe(from: checkpoint) { ... }
public final class EventSubscription: AsyncSequence, Sendable {
    public typealias Element = RecordedEvent

    private struct State {
        var position: LogPosition
        var buffer: [RecordedEvent] = []
        var bufferIndex = 0
        var listener: Task<Void, Never>?
    }

    private let log: EventLog
    private let batchSize: Int
    private let pollInterval: Duration
    private let listen: Bool
    private let logger: Logger
    private let wake = WakeSignal()
    private let state: Mutex<State>
    private let heard = NotificationCount()

    init(log: EventLog, start: LogPosition, batchSize: Int, pollInterval: Duration, listen: Bool, logger: Logger) {
        self.log = log
        self.listen = listen
        self.batchSize = batchSize
        self.pollInterval = pollInterval
        self.logger = logger
        self.state = Mutex(State(position: start))
    }

    deinit {
        state.withLock { $0.listener?.cancel() }
    }

    /// The position of the last event handed out.
    public var position: LogPosition { state.withLock { $0.position } }

    /// Append notifications received so far (tests: a reader that follows by its settling reads
    /// alone, with notifications lost, would deliver all the same).
    public var notifications: Int { heard.count.load(ordering: .relaxed) }

    /// Starts listening for appends; called by the first `next()`, or earlier by a caller that
    /// wants the listener up before it writes (tests).
    public func startListening() async {
        guard listen else { return }
        let (ready, readyContinuation) = AsyncStream<Void>.makeStream()
        let started = state.withLock { state -> Bool in
            guard state.listener == nil else { return false }
            let configuration = log.pool.configuration
            let logger = self.logger
            let wake = self.wake
            let heard = self.heard
            state.listener = Task {
                var announced = false
                while !Task.isCancelled {
                    let notifications = PostgresListener.notifications(
                        configuration: configuration, channels: [EventLog.notificationChannel], logger: logger,
                        onListening: { readyContinuation.yield() })
                    do {
                        for try await _ in notifications {
                            heard.count.add(1, ordering: .relaxed)
                            wake.signal()
                        }
                    } catch {
                        logger.warning("event notifications lost; polling until they return")
                    }
                    if !announced {
                        announced = true
                        readyContinuation.yield()
                    }
                    try? await Task.sleep(for: .seconds(1))
                }
            }
            return true
        }
        if started {
            var iterator = ready.makeAsyncIterator()
            _ = await iterator.next()
        }
    }

    /// The next event, waiting for one to be appended if the log is caught up. Nil only when
    /// the task is cancelled.
    public func next() async throws -> RecordedEvent? {
        await startListening()
        // After a wake that found nothing readable, read again on a short backoff for a while:
        // an append notified at its commit stays above the readable horizon while an older
        // transaction runs, and no second notification comes when that one ends. A call starts
        // in that window too: the events it is called for (a catch-up, or appends notified
        // before the listener was up) may be held above the horizon the same way, and no
        // notification will come for them.
        var settleUntil = ContinuousClock.now + Self.settleTime
        var settlePause = Self.firstSettlePause
        while !Task.isCancelled {
            let buffered = state.withLock { state -> RecordedEvent? in
                guard state.bufferIndex < state.buffer.count else { return nil }
                let event = state.buffer[state.bufferIndex]
                state.bufferIndex += 1
                state.position = event.logPosition
                return event
            }
            if let buffered { return buffered }
            let position = state.withLock { $0.position }
            let page = try await log.read(after: position, limit: batchSize)
            if page.isEmpty {
                let now = ContinuousClock.now
                if now < settleUntil {
                    await wake.wait(timeout: Swift.min(settlePause, pollInterval))
                    settlePause = Swift.min(settlePause * 2, Self.maxSettlePause)
                } else {
                    let started = ContinuousClock.now
                    await wake.wait(timeout: pollInterval)
                    // Woken before the poll interval: a notification.
                    if ContinuousClock.now - started < pollInterval {
                        settleUntil = ContinuousClock.now + Self.settleTime
                        settlePause = Self.firstSettlePause
                    }
                }
            } else {
                state.withLock { state in
                    state.buffer = page
                    state.bufferIndex = 0
                }
            }
        }
        return nil
    }

    /// How long after a notification the subscription keeps reading on a backoff, and its steps.
    /// The notified events become readable once every older writing transaction of the cluster
    /// has ended; under load (a suite of tests, long maintenance) that took more than 30 s, and
    /// the events then waited for the next poll. Reading at most once a second for two minutes
    /// costs little.
    static let settleTime: Duration = .seconds(120)
    static let firstSettlePause: Duration = .milliseconds(20)
    static let maxSettlePause: Duration = .seconds(1)

    public struct AsyncIterator: AsyncIteratorProtocol {
        let subscription: EventSubscription

        public mutating func next() async throws -> RecordedEvent? {
            try await subscription.next()
        }
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(subscription: self)
    }
}

/// A one-slot wake-up: `signal()` releases the current or the next `wait`.
final class WakeSignal: Sendable {
    private struct State {
        var pending = false
        var waiter: CheckedContinuation<Void, Never>?
    }

    private let state = Mutex(State())

    func signal() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if let waiter = state.waiter {
                state.waiter = nil
                return waiter
            }
            state.pending = true
            return nil
        }
        waiter?.resume()
    }

    func wait(timeout: Duration) async {
        let timer = Task { [self] in
            try? await Task.sleep(for: timeout)
            if !Task.isCancelled { signal() }
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let resumeNow = state.withLock { state -> Bool in
                if state.pending {
                    state.pending = false
                    return true
                }
                state.waiter = continuation
                return false
            }
            if resumeNow { continuation.resume() }
        }
        timer.cancel()
    }
}

/// A count shared with the listener's task (an `Atomic` cannot be captured by value).
private final class NotificationCount: Sendable {
    let count = Atomic<Int>(0)
}
