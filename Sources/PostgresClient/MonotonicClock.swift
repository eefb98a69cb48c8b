/// Time as the pool's waits and group commit's watcher see it: how much has passed since a
/// fixed origin, and a way to sleep. It is injected so that tests drive those waits with a
/// manual clock (`ManualClock` in the test support) instead of sleeping and hoping that a
/// loaded machine kept up; production uses `SystemClock`.
public protocol MonotonicClock: Sendable {
    /// Time since this clock's origin; never goes backwards.
    var now: Duration { get }
    /// Returns after `duration` of this clock's time, or throws when the task is cancelled.
    func sleep(for duration: Duration) async throws
}

/// The machine's monotonic clock (`ContinuousClock`).
public struct SystemClock: MonotonicClock {
    private static let origin = ContinuousClock.now

    public init() {}

    public var now: Duration { Self.origin.duration(to: .now) }

    public func sleep(for duration: Duration) async throws {
        try await Task.sleep(for: duration)
    }
}
