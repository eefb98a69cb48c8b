import PostgresClient
import Synchronization

/// A clock that moves only when a test says so (`advance(by:)`), for the waits of the pool and
/// of group commit's watcher: a test then states "after 1.9 s nothing expired, after 2.1 s it
/// did" without sleeping, whatever the machine's load. The pattern of Hummingbird's `MockClock`.
public final class ManualClock: MonotonicClock {
    private struct Sleeper {
        var deadline: Duration
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now: Duration = .zero
        var sleepers: [UInt64: Sleeper] = [:]
        var nextID: UInt64 = 0
        /// Sleepers cancelled before they were registered.
        var cancelled: Set<UInt64> = []
    }

    private let state = Mutex(State())

    public init() {}

    public var now: Duration { state.withLock { $0.now } }

    /// Tasks sleeping on this clock now: a test waits for this to know that a timeout or a
    /// watcher has started before it moves the clock.
    public var sleepers: Int { state.withLock { $0.sleepers.count } }

    public func sleep(for duration: Duration) async throws {
        let id = state.withLock { state -> UInt64 in
            state.nextID += 1
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                enum Outcome { case registered, elapsed, cancelled }
                let outcome = state.withLock { state -> Outcome in
                    if state.cancelled.remove(id) != nil { return .cancelled }
                    if duration <= .zero { return .elapsed }
                    state.sleepers[id] = Sleeper(deadline: state.now + duration, continuation: continuation)
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
    public func advance(by duration: Duration) {
        let due = state.withLock { state -> [Sleeper] in
            state.now += duration
            let now = state.now
            let due = state.sleepers.filter { $0.value.deadline <= now }
            for id in due.keys { state.sleepers.removeValue(forKey: id) }
            return Array(due.values)
        }
        for sleeper in due { sleeper.continuation.resume() }
    }
}
