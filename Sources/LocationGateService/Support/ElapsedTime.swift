/// A standard `Clock` read as the time passed since a fixed instant, for what keeps its times
/// as `Duration`s: group commit's queue (`GroupCommitQueue` is a state machine of plain
/// values, tested without a clock) and a cached reading's age.
///
/// The clock itself is injected as `any Clock<Duration>`: `ContinuousClock` in production, a
/// test's manual clock (`ManualClock` in the test support, a `Clock` like any other) so that a
/// test moves time instead of sleeping. This only opens it once, keeping its instants typed.
public struct ElapsedTime: Sendable {
    private let read: @Sendable () -> Duration
    private let sleeper: @Sendable (Duration) async throws -> Void

    /// Starts at `clock`'s present instant.
    public init(_ clock: any Clock<Duration>) {
        let opened = Self.open(clock)
        read = opened.0
        sleeper = opened.1
    }

    private static func open<C: Clock>(
        _ clock: C
    ) -> (@Sendable () -> Duration, @Sendable (Duration) async throws -> Void) where C.Duration == Duration {
        let origin = clock.now
        return ({ origin.duration(to: clock.now) }, { try await clock.sleep(for: $0) })
    }

    /// Time passed on the clock since this was made; never goes backwards.
    public var now: Duration { read() }

    /// Returns after `duration` of the clock's time, or throws when the task is cancelled.
    public func sleep(for duration: Duration) async throws {
        try await sleeper(duration)
    }
}
