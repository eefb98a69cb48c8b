import Foundation

/// While the caches do not follow the log (the LISTEN connection is down: a failover, a
/// PostgreSQL restart), push streams are not woken by changes and poll the database instead.
/// Each stream polls on its own jittered schedule, 1 to 2 s apart, so that thousands of
/// streams spread their reads over time instead of reaching for the shared pool on the same
/// tick.
enum OutagePolling {
    /// Seconds between two polls of one stream.
    static let interval: ClosedRange<Double> = 1.0...2.0

    /// When a stream that polls now polls next.
    static func next(after now: ContinuousClock.Instant) -> ContinuousClock.Instant {
        var generator = SystemRandomNumberGenerator()
        return next(after: now, using: &generator)
    }

    static func next(after now: ContinuousClock.Instant, using generator: inout some RandomNumberGenerator) -> ContinuousClock.Instant {
        now + .milliseconds(Int((Double.random(in: interval, using: &generator) * 1000).rounded()))
    }
}
