/// The counts an experiment keeps per variant as events and exposures arrive
/// (`experiment_counts`, SPEC §16 "Results"): what results and the guard are computed from, so
/// that neither scans exposures.
public struct VariantCounts: Sendable, Hashable {
    public var variant: String
    /// Units exposed to the variant (a reinstalled device once per install).
    public var exposed: Int
    /// Of them, those with a first qualifying answer (explicit or inferred, corrections
    /// applied; Android's `dismissed` is an answer that grants nothing).
    public var answered: Int
    /// Of those, the ones whose first qualifying answer granted what the prompt asked.
    public var granted: Int

    public init(variant: String, exposed: Int = 0, answered: Int = 0, granted: Int = 0) {
        self.variant = variant
        self.exposed = exposed
        self.answered = answered
        self.granted = granted
    }
}

/// One row of an experiment's results (SPEC §16): a variant's counts, its rates with their 95%
/// intervals, and, for a variant other than the control, its uplift and p against the control.
///
/// Two rates, because they answer different questions. `grantRate` (granted/answered) is the
/// rate among those asked; `exposedGrantRate` (granted/exposed) is the rate among everyone the
/// variant was shown to, and it is the verdict: a variant that lets people skip the prompt (a
/// priming screen with "Not now") raises `grantRate`, since only the willing are asked, while
/// fewer people grant in all. Uplift and p compare exposed grant rates for that reason.
public struct VariantResult: Sendable, Hashable {
    public let variant: String
    public let exposed: Int
    public let answered: Int
    public let granted: Int
    /// granted/answered; nil when nothing was answered.
    public let grantRate: Double?
    /// Wilson's interval of `grantRate`; nil when nothing was answered.
    public let ci95: WilsonScoreInterval?
    /// granted/exposed; nil when the variant exposed nothing.
    public let exposedGrantRate: Double?
    /// Wilson's interval of `exposedGrantRate`; nil when the variant exposed nothing.
    public let ci95Exposed: WilsonScoreInterval?
    /// The exposed grant rate minus the control's; nil on the control, and where either
    /// exposed nothing.
    public let uplift: Double?
    /// The two-sided p of the two-proportion z-test of granted/exposed against the control's;
    /// nil on the control, where either side exposed nothing, or where the pooled rate is 0 or 1.
    public let pValue: Double?

    /// An experiment's rows: the control first, then the other variants in their listed order.
    /// A variant missing from `counts` counted nothing yet (zeros); counts of keys that are no
    /// variant are ignored.
    public static func rows(of definition: ExperimentDefinition, counts: [VariantCounts]) -> [VariantResult] {
        var byVariant: [String: VariantCounts] = [:]
        for count in counts { byVariant[count.variant] = count }
        let control = byVariant[definition.control] ?? VariantCounts(variant: definition.control)
        return definition.variantsControlFirst.map { variant in
            let own = byVariant[variant.key] ?? VariantCounts(variant: variant.key)
            return VariantResult(own, control: variant.key == definition.control ? nil : control)
        }
    }

    /// The row of `counts`; `control` is the control's counts, nil for the control's own row.
    public init(_ counts: VariantCounts, control: VariantCounts?) {
        self.variant = counts.variant
        self.exposed = counts.exposed
        self.answered = counts.answered
        self.granted = counts.granted
        self.grantRate = counts.answered > 0 ? Double(counts.granted) / Double(counts.answered) : nil
        self.ci95 = WilsonScoreInterval(successes: counts.granted, trials: counts.answered)
        let exposedRate: Double? = counts.exposed > 0 ? Double(counts.granted) / Double(counts.exposed) : nil
        self.exposedGrantRate = exposedRate
        self.ci95Exposed = WilsonScoreInterval(successes: counts.granted, trials: counts.exposed)
        if let control, let exposedRate, control.exposed > 0 {
            self.uplift = exposedRate - Double(control.granted) / Double(control.exposed)
            self.pValue = TwoProportionZTest(
                controlSuccesses: control.granted, controlTrials: control.exposed,
                variantSuccesses: counts.granted, variantTrials: counts.exposed)?.twoSidedP
        } else {
            self.uplift = nil
            self.pValue = nil
        }
    }
}

/// The API's form of a row (SPEC §16): every field always present, null where there is no
/// value; an interval as `[low, high]`.
extension VariantResult: Encodable {
    private enum CodingKeys: String, CodingKey {
        case variant, exposed, answered, granted, grantRate, ci95, exposedGrantRate, ci95Exposed, uplift, pValue
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(variant, forKey: .variant)
        try container.encode(exposed, forKey: .exposed)
        try container.encode(answered, forKey: .answered)
        try container.encode(granted, forKey: .granted)
        try Self.encode(grantRate, forKey: .grantRate, in: &container)
        try Self.encode(ci95?.bounds, forKey: .ci95, in: &container)
        try Self.encode(exposedGrantRate, forKey: .exposedGrantRate, in: &container)
        try Self.encode(ci95Exposed?.bounds, forKey: .ci95Exposed, in: &container)
        try Self.encode(uplift, forKey: .uplift, in: &container)
        try Self.encode(pValue, forKey: .pValue, in: &container)
    }

    private static func encode<Value: Encodable>(
        _ value: Value?, forKey key: CodingKeys, in container: inout KeyedEncodingContainer<CodingKeys>
    ) throws {
        if let value { try container.encode(value, forKey: key) } else { try container.encodeNil(forKey: key) }
    }
}
