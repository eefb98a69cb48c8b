/// The rule that stops an experiment on its own (SPEC §16 `guard`): once the control and a
/// variant each have `minAnswered` answers, the experiment stops, with the control as winner,
/// when the control's exposed grant rate exceeds the variant's by more than `maxDrop` and the
/// one-sided p of that drop is below 0.01.
///
/// It protects the app from a variant that costs grants while the team is not looking, and it
/// needs both conditions for that: the p alone would stop for a drop too small to matter once
/// many answered; the drop alone would stop on the noise of a few dozen answers. The rates
/// compared are the exposed grant rates (granted/exposed), the experiment's verdict, for the
/// reason `VariantResult` gives. How often a check stops an experiment that is in truth no worse
/// is in docs/experiments.md (about 1% for one check, more when checked again and again).
public struct ExperimentGuard: Sendable, Hashable {
    public static let defaultMinAnswered = 100
    /// The one-sided p below which a drop counts as real.
    public static let significance = 0.01
    /// The largest `minAnswered` taken, so that it fits every counter.
    public static let maxMinAnswered = 1_000_000_000

    /// In rate points, 0 to 1: 0.05 is five points.
    public let maxDrop: Double
    /// Answers the control and a variant must each have before the guard judges them; at
    /// least 1.
    public let minAnswered: Int

    /// Checks the fields, naming them as the API does: `maxDrop` 0 to 1, `minAnswered` 1 or more.
    public init(maxDrop: Double, minAnswered: Int = ExperimentGuard.defaultMinAnswered) throws(EventValidationError) {
        guard maxDrop >= 0, maxDrop <= 1 else {
            throw EventValidationError.invalid("guard.maxDrop", "must be a number from 0 to 1 (rate points: 0.05 is five points), not \(maxDrop)")
        }
        guard minAnswered >= 1, minAnswered <= Self.maxMinAnswered else {
            throw EventValidationError.invalid("guard.minAnswered", "must be an integer from 1 to \(Self.maxMinAnswered), not \(minAnswered)")
        }
        self.maxDrop = maxDrop
        self.minAnswered = minAnswered
    }

    /// What the guard found against one variant: the audit entry's details (SPEC §16:
    /// `{"variant", "controlRate", "variantRate", "p"}`).
    public struct Breach: Sendable, Hashable {
        public let variant: String
        /// The control's exposed grant rate.
        public let controlRate: Double
        /// The variant's exposed grant rate.
        public let variantRate: Double
        /// The one-sided p that the variant's rate is below the control's.
        public let p: Double

        public init(variant: String, controlRate: Double, variantRate: Double, p: Double) {
            self.variant = variant
            self.controlRate = controlRate
            self.variantRate = variantRate
            self.p = p
        }
    }

    /// Whether the experiment must stop: the breach of the variant with the strongest evidence
    /// (the smallest p; the first listed of equals) among `variants` that breach, or nil.
    /// `control` is the control's counts; `variants` the others' (the control among them is
    /// skipped). Pure: the caller reads the counts and makes the stop.
    public func breach(control: VariantCounts, variants: [VariantCounts]) -> Breach? {
        var strongest: Breach?
        for variant in variants where variant.variant != control.variant {
            guard let found = breach(control: control, variant: variant) else { continue }
            if strongest.map({ found.p < $0.p }) ?? true { strongest = found }
        }
        return strongest
    }

    /// The guard's judgement of one variant against the control.
    ///
    /// "Exceeds by more than `maxDrop`" is decided on the counts cross-multiplied,
    /// g꜀·eᵥ − gᵥ·e꜀ > maxDrop·e꜀·eᵥ, rather than on the two rates subtracted: 0.55 − 0.50 is
    /// 0.050000000000000044 in floating point, which would stop an experiment whose drop is
    /// exactly the allowed five points.
    public func breach(control: VariantCounts, variant: VariantCounts) -> Breach? {
        guard control.answered >= minAnswered, variant.answered >= minAnswered,
              control.exposed > 0, variant.exposed > 0
        else { return nil }
        let gap = Double(control.granted) * Double(variant.exposed) - Double(variant.granted) * Double(control.exposed)
        guard gap > maxDrop * Double(control.exposed) * Double(variant.exposed) else { return nil }
        guard let test = TwoProportionZTest(
            controlSuccesses: control.granted, controlTrials: control.exposed,
            variantSuccesses: variant.granted, variantTrials: variant.exposed)
        else { return nil }
        let p = test.pVariantLower
        guard p < Self.significance else { return nil }
        return Breach(
            variant: variant.variant, controlRate: Double(control.granted) / Double(control.exposed),
            variantRate: Double(variant.granted) / Double(variant.exposed), p: p)
    }
}
