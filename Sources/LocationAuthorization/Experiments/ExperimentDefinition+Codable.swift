import Foundation

/// The API's and the store's form of a definition: `PUT /v1/experiments/{key}` reads it (the
/// key comes from the path), `experiments.definition` stores it, and a GET shows it with the
/// defaults filled in (`description` `""`, `control` the first variant, `eligible` with a null
/// for each condition not given, `guard` null without one), which reads back as the same
/// definition.
///
/// Read in two steps, as a feature's body is (`FeatureCatalog.parseDefinition`): the JSON types
/// first, through `EventCoding` (a missing or mistyped field is its `missingField`/`wrongType`,
/// a 400), then the values, through the checking initializers (a value out of range or outside
/// the vocabulary is `invalidValue`, a 422 naming the field). Members the body does not define
/// are the HTTP layer's to refuse before this runs (`ConfigurationBody`, SPEC §14), with the
/// shape `description, prompt, variants[{key, weight}], control,
/// eligible{platforms, statuses, minAppVersion}, guard{maxDrop, minAnswered}`.
extension ExperimentDefinition {
    /// Reads a definition from a PUT's body or the stored JSON, checking everything.
    public init(key: String, body: Data) throws(EventValidationError) {
        try ClientText.checkKey(key, field: "key", bytes: Self.keyBytes)
        let raw = try EventCoding.decode(DefinitionBody.self, from: body)
        try self.init(key: key, raw: raw)
    }

    private init(key: String, raw: DefinitionBody) throws(EventValidationError) {
        let prompt: ExperimentPromptKinds
        switch raw.prompt {
        case .one(let name):
            let kind = try Self.promptKind(name, field: "prompt")
            prompt = .one(kind)
        case .list(let names):
            var kinds: [Prompt] = []
            for (index, name) in names.enumerated() {
                let kind = try Self.promptKind(name, field: "prompt[\(index)]")
                kinds.append(kind)
            }
            prompt = .anyOf(kinds)
        }
        var variants: [ExperimentVariant] = []
        for (index, variant) in raw.variants.enumerated() {
            let weight = variant.weight
            guard weight.rounded() == weight, weight >= 0, weight <= Double(Self.totalWeight) else {
                throw EventValidationError.invalid(
                    "variants[\(index)].weight", "must be an integer from 0 to \(Self.totalWeight), not \(Self.numberText(weight))")
            }
            variants.append(ExperimentVariant(key: variant.key, weight: Int(weight)))
        }
        var eligibility = ExperimentEligibility()
        if let eligible = raw.eligible {
            var platforms: [Platform]?
            if let names = eligible.platforms {
                platforms = []
                for name in names {
                    guard let platform = Platform(rawValue: name) else {
                        throw EventValidationError.invalid(
                            "eligible.platforms", "\(name.prefix(64)) is not one of " + Platform.allCases.map(\.rawValue).joined(separator: ", "))
                    }
                    platforms?.append(platform)
                }
            }
            var statuses: [AuthorizationStatus]?
            if let names = eligible.statuses {
                statuses = []
                for name in names {
                    guard let status = AuthorizationStatus(rawValue: name) else {
                        throw EventValidationError.invalid(
                            "eligible.statuses",
                            "\(name.prefix(64)) is not one of " + AuthorizationStatus.allCases.map(\.rawValue).joined(separator: ", "))
                    }
                    statuses?.append(status)
                }
            }
            var minAppVersion: AppVersion?
            switch eligible.minAppVersion {
            case nil:
                minAppVersion = nil
            case .text(let text)?:
                guard let version = AppVersion(text) else {
                    throw EventValidationError.invalid("eligible.minAppVersion", "must be \(AppVersion.rule), or null")
                }
                minAppVersion = version
            case .other?:
                throw EventValidationError.invalid("eligible.minAppVersion", "must be a string of \(AppVersion.rule), or null")
            }
            eligibility = try ExperimentEligibility(platforms: platforms, statuses: statuses, minAppVersion: minAppVersion)
        }
        var stopGuard: ExperimentGuard?
        if let guardBody = raw.guardRule {
            var minAnswered = ExperimentGuard.defaultMinAnswered
            if let given = guardBody.minAnswered {
                guard given.rounded() == given, given >= 1, given <= Double(ExperimentGuard.maxMinAnswered) else {
                    throw EventValidationError.invalid(
                        "guard.minAnswered", "must be an integer from 1 to \(ExperimentGuard.maxMinAnswered), not \(Self.numberText(given))")
                }
                minAnswered = Int(given)
            }
            stopGuard = try ExperimentGuard(maxDrop: guardBody.maxDrop, minAnswered: minAnswered)
        }
        try self.init(
            key: key, description: raw.description ?? "", prompt: prompt, variants: variants, control: raw.control,
            eligibility: eligibility, guard: stopGuard)
    }

    /// A number as the body wrote it: `101`, not Swift's `101.0`.
    private static func numberText(_ number: Double) -> String {
        number.rounded() == number && abs(number) < 1e15 ? String(Int(number)) : String(number)
    }

    private static func promptKind(_ name: String, field: String) throws(EventValidationError) -> Prompt {
        guard let kind = Prompt(rawValue: name) else {
            throw EventValidationError.invalid(field, "\(name.prefix(64)) is not one of " + Prompt.allCases.map(\.rawValue).joined(separator: ", "))
        }
        return kind
    }
}

extension ExperimentDefinition: Encodable {
    enum CodingKeys: String, CodingKey {
        case description, prompt, variants, control, eligible
        case guardRule = "guard"
    }

    /// The definition without its key, defaults filled in: the stored form, and the fields a
    /// GET shows beside `key` and the state (`Experiment`'s encoding).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(description, forKey: .description)
        switch prompt {
        case .one(let kind): try container.encode(kind, forKey: .prompt)
        case .anyOf(let kinds): try container.encode(kinds, forKey: .prompt)
        }
        try container.encode(variants, forKey: .variants)
        try container.encode(control, forKey: .control)
        try container.encode(eligibility, forKey: .eligible)
        if let stopGuard = self.guard {
            try container.encode(stopGuard, forKey: .guardRule)
        } else {
            try container.encodeNil(forKey: .guardRule)
        }
    }
}

extension ExperimentEligibility: Encodable {
    private enum CodingKeys: String, CodingKey {
        case platforms, statuses, minAppVersion
    }

    /// Every condition, null where none was given.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        if let platforms { try container.encode(platforms, forKey: .platforms) } else { try container.encodeNil(forKey: .platforms) }
        if let statuses { try container.encode(statuses, forKey: .statuses) } else { try container.encodeNil(forKey: .statuses) }
        if let minAppVersion {
            try container.encode(minAppVersion, forKey: .minAppVersion)
        } else {
            try container.encodeNil(forKey: .minAppVersion)
        }
    }
}

extension ExperimentGuard: Encodable {
    private enum CodingKeys: String, CodingKey {
        case maxDrop, minAnswered
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(maxDrop, forKey: .maxDrop)
        try container.encode(minAnswered, forKey: .minAnswered)
    }
}

/// The body's JSON types, before their values are checked.
private struct DefinitionBody: Decodable {
    var description: String?
    var prompt: PromptField
    var variants: [VariantField]
    var control: String?
    var eligible: EligibleField?
    var guardRule: GuardField?

    enum CodingKeys: String, CodingKey {
        case description, prompt, variants, control, eligible
        case guardRule = "guard"
    }

    /// `prompt`: a kind, or a list of kinds.
    enum PromptField: Decodable {
        case one(String)
        case list([String])

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let name = try? container.decode(String.self) {
                self = .one(name)
            } else if let names = try? container.decode([String].self) {
                self = .list(names)
            } else {
                throw EventValidationError(.wrongType, field: "prompt", message: "prompt must be a string or an array of strings")
            }
        }
    }

    struct VariantField: Decodable {
        var key: String
        /// A number, so that `1.5` is a 422 naming the weight rather than the decoder's 400
        /// (SPEC §14: a number where an integer is due); `50.0` is 50.
        var weight: Double
    }

    struct EligibleField: Decodable {
        var platforms: [String]?
        var statuses: [String]?
        var minAppVersion: LooseText?
    }

    struct GuardField: Decodable {
        var maxDrop: Double
        var minAnswered: Double?
    }

    /// A value read where a string is expected, so that another JSON type is a 422 naming the
    /// field, as a feature's `minAppVersion` is (SPEC §15).
    enum LooseText: Decodable {
        case text(String)
        case other

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let text = try? container.decode(String.self) {
                self = .text(text)
            } else {
                self = .other
            }
        }
    }
}
