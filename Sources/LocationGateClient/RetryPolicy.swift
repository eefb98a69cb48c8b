/// How long the sender waits before retrying a batch that got no answer, or a 429/503 without
/// Retry-After: exponential backoff with full jitter.
///
/// The n-th consecutive retry waits a uniformly random time in `0...min(cap, base * 2^n)`.
/// The randomness matters more than the growth: after a server restart every device retries,
/// and without jitter they would all come back in the same instant, again and again. Full
/// jitter spreads them over the whole window (the AWS Architecture Blog's "Exponential Backoff
/// and Jitter" compares the variants).
public struct RetryPolicy: Sendable, Hashable {
    /// The first window: 0.5 s.
    public var base: Duration
    /// The largest window: 60 s.
    public var cap: Duration
    /// The longest Retry-After honoured; a larger one is read as this (a misconfigured proxy
    /// should not silence a device for days).
    public var maximumRetryAfter: Duration

    public init(base: Duration = .milliseconds(500), cap: Duration = .seconds(60), maximumRetryAfter: Duration = .seconds(3600)) {
        self.base = base
        self.cap = cap
        self.maximumRetryAfter = maximumRetryAfter
    }

    /// The window of the `attempt`-th consecutive retry (0 for the first).
    public func window(attempt: Int) -> Duration {
        let factor = 1 << min(max(attempt, 0), 30)
        let grown = Self.seconds(base) * Double(factor)
        return .seconds(min(Self.seconds(cap), grown))
    }

    /// The wait before the `attempt`-th retry: `window(attempt:)` scaled by `unitRandom`, a
    /// number in 0...1 (clamped).
    public func delay(attempt: Int, unitRandom: Double) -> Duration {
        let fraction = min(max(unitRandom, 0), 1)
        return .seconds(Self.seconds(window(attempt: attempt)) * fraction)
    }

    static func seconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
