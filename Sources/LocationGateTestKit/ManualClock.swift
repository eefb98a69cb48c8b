import Synchronization

/// A `Clock` that moves only when a test says so (`advance(by:)`), for the waits of the pool,
/// group commit's watcher and cached readings: a test then states "after 1.9 s nothing
/// expired, after 2.1 s it did" without sleeping, whatever the machine's load. The code under
/// test takes any `Clock<Duration>` (`ContinuousClock` in production); this is one, as
/// Hummingbird's `MockClock` and swift-clocks' `TestClock` are.
public final class ManualClock: Clock {
    public typealias Duration = Swift.Duration

    /// A point on this clock: the time it has been moved since it was made.
    public struct Instant: InstantProtocol {
        public typealias Duration = Swift.Duration

        public var offset: Swift.Duration

        public init(offset: Swift.Duration) {
            self.offset = offset
        }

        public func advanced(by duration: Swift.Duration) -> Instant {
            Instant(offset: offset + duration)
        }

        /// From this instant to `other`: positive when `other` is later.
        public func duration(to other: Instant) -> Swift.Duration {
            other.offset - offset
        }

        public static func < (lhs: Instant, rhs: Instant) -> Bool {
            lhs.offset < rhs.offset
        }
    }

    private struct Sleeper {
        var deadline: Instant
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now = Instant(offset: .zero)
        var sleepers: [UInt64: Sleeper] = [:]
        var nextID: UInt64 = 0
        /// Sleepers cancelled before they were registered.
        var cancelled: Set<UInt64> = []
    }

    private let state = Mutex(State())

    public init() {}

    public var now: Instant { state.withLock { $0.now } }

    public var minimumResolution: Swift.Duration { .nanoseconds(1) }

    /// Tasks sleeping on this clock now: a test waits for this to know that a timeout or a
    /// watcher has started before it moves the clock.
    public var sleepers: Int { state.withLock { $0.sleepers.count } }

    /// Returns once the clock has been moved to `deadline` or past it (at once when it is
    /// already there), or throws `CancellationError` when the task is cancelled first.
    public func sleep(until deadline: Instant, tolerance: Swift.Duration?) async throws {
        let id = state.withLock { state -> UInt64 in
            state.nextID += 1
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                enum Outcome { case registered, elapsed, cancelled }
                let outcome = state.withLock { state -> Outcome in
                    if state.cancelled.remove(id) != nil { return .cancelled }
                    if deadline <= state.now { return .elapsed }
                    state.sleepers[id] = Sleeper(deadline: deadline, continuation: continuation)
                    return .registered
                }
                switch outcome {
                case .registered: break
                case .elapsed: continuation.resume()
                case .cancelled: continuation.resume(throwing: CancellationError())
                }
            }
        } onCancel: {
            let sleeper = state.withLock { state -> Sleeper? in
                if let sleeper = state.sleepers.removeValue(forKey: id) { return sleeper }
                state.cancelled.insert(id)
                return nil
            }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Moves the clock forward and wakes every sleeper whose time has come.
    public func advance(by duration: Swift.Duration) {
        let due = state.withLock { state -> [Sleeper] in
            state.now = state.now.advanced(by: duration)
            let now = state.now
            let due = state.sleepers.filter { $0.value.deadline <= now }
            for id in due.keys { state.sleepers.removeValue(forKey: id) }
            return Array(due.values)
        }
        for sleeper in due { sleeper.continuation.resume() }
    }
}
