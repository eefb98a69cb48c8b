/// The Wilson score interval of a proportion (Wilson 1927; Newcombe 1998, method 3): SPEC §16's
/// `ci95` and `ci95Exposed`, at z = 1.959964.
///
/// Wilson's rather than the textbook p ± z·√(p(1-p)/n), because experiments start small and
/// grant rates sit near 0 or 1 for some prompts: there the simple interval collapses to a point
/// at 0/n or n/n and leaves [0, 1] near them, where Wilson's stays inside and keeps a width.
public struct WilsonScoreInterval: Sendable, Hashable {
    /// The two-sided 95% quantile of the standard normal distribution, as SPEC §16 fixes it.
    public static let z95 = 1.959964

    public let low: Double
    public let high: Double

    /// The interval of `successes` out of `trials`; nil at 0 trials (SPEC §16: null at 0), and
    /// for counts no proportion has (negative, or more successes than trials).
    public init?(successes: Int, trials: Int, z: Double = WilsonScoreInterval.z95) {
        guard trials > 0, successes >= 0, successes <= trials else { return nil }
        let n = Double(trials)
        let p = Double(successes) / n
        let z2 = z * z
        let denominator = 1 + z2 / n
        let center = (p + z2 / (2 * n)) / denominator
        let half = z / denominator * (p * (1 - p) / n + z2 / (4 * n * n)).squareRoot()
        // At 0/n and n/n the bound is 0 or 1 in exact arithmetic; rounding can leave it a hair
        // outside.
        self.low = successes == 0 ? 0 : max(0, center - half)
        self.high = successes == trials ? 1 : min(1, center + half)
    }

    /// `[low, high]`, as the API writes it.
    public var bounds: [Double] { [low, high] }
}
