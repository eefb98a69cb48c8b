/// A prompt experiment of an app, as `PUT /v1/experiments/{key}` defines it (SPEC §16): which
/// prompt's answers are the outcome, the variants and their shares, which variant is the
/// control, who takes part, and when to stop it on its own.
///
/// A value of this type has been checked: the initializer refuses what SPEC §16 refuses, with
/// an `EventValidationError` naming the field as the API names it (`variants`,
/// `variants[1].key`, `guard.maxDrop`), the same typed error a feature's body gives
/// (`ClientText`), so that the HTTP layer maps both to a 422 `validationFailed` in one place.
/// Its properties are constants for that reason: a changed definition is a new value, checked
/// again.
public struct ExperimentDefinition: Sendable, Hashable {
    /// As a feature's key: 1 to 64 bytes of `[A-Za-z0-9._-]` (`ClientText.checkKey`). Variant
    /// keys follow the same rule, since OFREP answers them as the flag's `variant`.
    public static let keyBytes = 1...64
    /// As a feature's `description`.
    public static let descriptionBytes = 0...1000
    /// How many variants an experiment has.
    public static let variantCounts = 2...10
    /// What the variants' weights sum to: a weight is a share in percent.
    public static let totalWeight = 100
    /// How many experiments an app may have (a 51st is a 422 naming `key`; the store counts).
    public static let maxPerApp = 50

    public let key: String
    /// Free text for people; `""` when the body gave none.
    public let description: String
    /// The prompt kinds whose answers are the outcome.
    public let prompt: ExperimentPromptKinds
    /// In their listed order, which is the order of their bucket ranges (`ExperimentBuckets`)
    /// and of the results after the control.
    public let variants: [ExperimentVariant]
    /// The key of the variant the others are compared with, and the one every device gets that
    /// is not eligible (or, once stopped, unless another winner was chosen).
    public let control: String
    public let eligibility: ExperimentEligibility
    /// When given, the experiment stops itself once a variant is clearly worse than the control.
    public let `guard`: ExperimentGuard?

    /// Checks a definition as SPEC §16 says, in the order of its fields: `key`, `description`,
    /// `prompt` (one kind at least, distinct), `variants` (2 to 10; each key a feature key,
    /// distinct; each weight 0 to 100; the weights summing to 100, else an error naming
    /// `variants`), `control` (one of the variants' keys; nil means the first variant).
    /// `eligibility` and `guard` were checked when they were made.
    public init(
        key: String, description: String = "", prompt: ExperimentPromptKinds, variants: [ExperimentVariant],
        control: String? = nil, eligibility: ExperimentEligibility = ExperimentEligibility(), guard stopGuard: ExperimentGuard? = nil
    ) throws(EventValidationError) {
        try ClientText.checkKey(key, field: "key", bytes: Self.keyBytes)
        try ClientText.check(description, field: "description", bytes: Self.descriptionBytes)
        let kinds = prompt.kinds
        guard !kinds.isEmpty else {
            throw EventValidationError.invalid("prompt", "must name at least one prompt kind")
        }
        var seenKinds = Set<Prompt>()
        for kind in kinds where !seenKinds.insert(kind).inserted {
            throw EventValidationError.invalid("prompt", "\(kind.rawValue) is given twice; the kinds must be distinct")
        }
        guard Self.variantCounts.contains(variants.count) else {
            throw EventValidationError.invalid(
                "variants", "must hold \(Self.variantCounts.lowerBound) to \(Self.variantCounts.upperBound) variants, not \(variants.count)")
        }
        var seenKeys = Set<String>()
        for (index, variant) in variants.enumerated() {
            try ClientText.checkKey(variant.key, field: "variants[\(index)].key", bytes: Self.keyBytes)
            guard seenKeys.insert(variant.key).inserted else {
                throw EventValidationError.invalid("variants[\(index)].key", "\(variant.key) is given twice; variant keys must be distinct")
            }
            guard (0...Self.totalWeight).contains(variant.weight) else {
                throw EventValidationError.invalid(
                    "variants[\(index)].weight", "must be an integer from 0 to \(Self.totalWeight), not \(variant.weight)")
            }
        }
        let total = variants.reduce(0) { $0 + $1.weight }
        guard total == Self.totalWeight else {
            throw EventValidationError.invalid("variants", "the weights must sum to \(Self.totalWeight), not \(total)")
        }
        let control = control ?? variants[0].key
        guard seenKeys.contains(control) else {
            let keys = variants.map(\.key).joined(separator: ", ")
            throw EventValidationError.invalid("control", "\(control.prefix(64)) is not one of the variants' keys (\(keys))")
        }
        self.key = key
        self.description = description
        self.prompt = prompt
        self.variants = variants
        self.control = control
        self.eligibility = eligibility
        self.guard = stopGuard
    }

    /// The variants' keys in their listed order.
    public var variantKeys: [String] { variants.map(\.key) }

    /// Whether `key` names one of the variants (a stop's `winner` must).
    public func hasVariant(_ key: String) -> Bool {
        variants.contains { $0.key == key }
    }

    /// The variants as results list them (SPEC §16): the control first, the others as listed.
    public var variantsControlFirst: [ExperimentVariant] {
        variants.filter { $0.key == control } + variants.filter { $0.key != control }
    }

    /// The first field a PUT may not change while the experiment runs (SPEC §16: a 409
    /// `experimentRunning`), or nil when `replacement` changes only what may change: the
    /// description, the weights, `eligible` and `guard`.
    ///
    /// The variants' keys and their order are fixed because the order lays out the bucket
    /// ranges and the keys name what exposures hold: a change would move exposed devices'
    /// neighbours into other variants and orphan counts. The prompt is fixed because it is what
    /// was counted so far; the control because uplift and p are measured against it. Weights
    /// may change: an exposed device keeps its variant whatever they become (sticky), so a new
    /// weight only shares out the devices not exposed yet. Prompt kinds are compared as a set:
    /// `"whenInUse"` and `["whenInUse"]` count the same answers.
    public func fixedFieldChanged(by replacement: ExperimentDefinition) -> ExperimentFixedField? {
        if variantKeys != replacement.variantKeys { return .variants }
        if Set(prompt.kinds) != Set(replacement.prompt.kinds) { return .prompt }
        if control != replacement.control { return .control }
        return nil
    }
}

/// One variant: its key (what evaluations answer) and its share of the buckets, in percent.
public struct ExperimentVariant: Sendable, Hashable, Codable {
    public var key: String
    /// 0 to 100; a variant of weight 0 gets no new devices (those exposed before keep it).
    public var weight: Int

    public init(key: String, weight: Int) {
        self.key = key
        self.weight = weight
    }
}

/// The prompt kinds of an experiment (SPEC §16 `prompt`): one kind, or a list when the
/// variants ask differently (the location button against the dialog), the first answer to any
/// of them counting. Kept as given, so that a GET shows a string where a string was PUT.
public enum ExperimentPromptKinds: Sendable, Hashable {
    case one(Prompt)
    case anyOf([Prompt])

    /// The kinds, in the order given.
    public var kinds: [Prompt] {
        switch self {
        case .one(let prompt): [prompt]
        case .anyOf(let prompts): prompts
        }
    }

    /// Whether an answer to `prompt` can be an outcome of the experiment.
    public func contains(_ prompt: Prompt) -> Bool {
        kinds.contains(prompt)
    }
}

/// The fields a running experiment's PUT may not change (SPEC §16, 409 `experimentRunning`).
public enum ExperimentFixedField: String, Sendable, Hashable, CaseIterable {
    /// The variants' keys or their order.
    case variants
    case prompt
    case control

    /// Why the change was refused, for the 409's message.
    public var message: String {
        switch self {
        case .variants:
            "variants: the variants' keys and their order cannot change while the experiment runs (weights can); stop it, or start another under a new key"
        case .prompt:
            "prompt: the prompt kinds cannot change while the experiment runs; stop it, or start another under a new key"
        case .control:
            "control: the control cannot change while the experiment runs (a body without control means the first variant); stop it, or start another under a new key"
        }
    }
}
