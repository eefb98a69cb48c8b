import Foundation

/// The two-proportion z-test with the pooled rate (SPEC §16 `pValue` and the guard): whether a
/// variant's rate differs from the control's by more than chance would make it.
///
/// z = (p₂ − p₁) / √(p̂(1 − p̂)(1/n₁ + 1/n₂)), p̂ the pooled rate (x₁ + x₂)/(n₁ + n₂), referred
/// to the standard normal distribution. The normal approximation is fair once each side has a
/// few successes and failures, which the guard's `minAnswered` (default 100) ensures before it
/// acts; the results show p from the first exposure, to be read with their counts.
public struct TwoProportionZTest: Sendable, Hashable {
    /// The standardised difference, positive when the variant's rate is above the control's.
    public let z: Double
    /// The pooled rate.
    public let pooledRate: Double

    /// The test of `variantSuccesses`/`variantTrials` against `controlSuccesses`/`controlTrials`;
    /// nil where there is nothing to test (SPEC §16): either side has no trials, or the pooled
    /// rate is 0 or 1 (every unit on both sides alike: no variance, z undefined). Nil too for
    /// counts no proportion has.
    public init?(controlSuccesses: Int, controlTrials: Int, variantSuccesses: Int, variantTrials: Int) {
        guard controlTrials > 0, variantTrials > 0,
              (0...controlTrials).contains(controlSuccesses), (0...variantTrials).contains(variantSuccesses)
        else { return nil }
        let successes = controlSuccesses + variantSuccesses, trials = controlTrials + variantTrials
        guard successes > 0, successes < trials else { return nil }
        let n1 = Double(controlTrials), n2 = Double(variantTrials)
        let pooled = Double(successes) / Double(trials)
        let standardError = (pooled * (1 - pooled) * (1 / n1 + 1 / n2)).squareRoot()
        let difference = Double(variantSuccesses) / n2 - Double(controlSuccesses) / n1
        self.z = difference / standardError
        self.pooledRate = pooled
    }

    /// The two-sided p: the chance, were both rates equal, of a difference at least this large
    /// in either direction. `erfc` keeps its precision far into the tail, where 1 − Φ would
    /// round to 0.
    public var twoSidedP: Double { erfc(abs(z) / 2.0.squareRoot()) }

    /// The one-sided p that the variant's rate is below the control's: Φ(z). It is the two-sided
    /// p halved when the variant's rate is the lower one (SPEC §16's guard), and 1 minus that
    /// when it is the higher.
    public var pVariantLower: Double { StandardNormal.cdf(z) }
}

/// The standard normal distribution's function, from `erfc` (C's, through Foundation).
public enum StandardNormal {
    /// Φ(x) = erfc(−x/√2) / 2, accurate in both tails.
    public static func cdf(_ x: Double) -> Double {
        0.5 * erfc(-x / 2.0.squareRoot())
    }
}
