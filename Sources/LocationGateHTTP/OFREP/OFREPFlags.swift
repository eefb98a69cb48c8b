import EventLog
import Foundation
import LocationAuthorization
import LocationGateJSON
import LocationGateService

/// Every OFREP flag of an app: each feature, a boolean flag (the service's OFREP face,
/// `OFREPEvaluating`), and each experiment (SPEC §16), a string flag whose `value` and
/// `variant` are the variant's key. OFREP's single and bulk evaluations and its event streams
/// all evaluate through here, so that the bulk answer's ETag and the stream's are the same.
///
/// A key names a feature first; only when no feature has it, an experiment (a feature and an
/// experiment of an app never share a key: `keyInUse`).
struct OFREPFlags: Sendable {
    let features: any OFREPEvaluating
    let experiments: any ExperimentsFace

    /// An experiment as a flag: `{"key", "metadata", "reason", "value", "variant"}`, `value`
    /// and `variant` the variant's key, `reason` `SPLIT` (assigned), `DEFAULT` (not eligible,
    /// or no device named) or `STATIC` (stopped); `metadata` the experiment's own reason with a
    /// device (`assigned`, `notEligible`, `stopped`) and, where the device was exposed, when.
    struct ExperimentFlag: Sendable {
        var key: String
        var variant: String
        var reason: String
        var metadata: [(name: String, value: String)]

        /// The answer of an evaluation for a device.
        init(_ answer: ExperimentAnswer) {
            key = answer.experiment
            variant = answer.variant
            reason = answer.reason.ofrepReason
            metadata = [("reason", answer.reason.rawValue)]
            if let exposedAt = answer.exposedAt { metadata.append(("exposedAt", RFC3339.string(from: exposedAt))) }
        }

        /// The answer without a device (OFREP without `deviceId`): the control, `DEFAULT`, or
        /// once stopped the winner, `STATIC`; nothing is exposed.
        init(withoutDevice experiment: Experiment) {
            let (variant, reason) = experiment.variantWithoutDevice
            key = experiment.key
            self.variant = variant
            self.reason = reason
            metadata = [("state", experiment.state.rawValue)]
        }

        /// Keys in byte order, as `FlagEvaluation.write(to:)` writes a feature's.
        func write(to writer: inout JSONWriter) {
            writer.objectStart()
            writer.field("key", key)
            writer.key("metadata")
            writer.objectStart()
            for item in metadata.sorted(by: { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }) {
                writer.key(item.name)
                writer.string(item.value)
            }
            writer.objectEnd()
            writer.field("reason", reason)
            writer.field("value", variant)
            writer.field("variant", variant)
            writer.objectEnd()
        }
    }

    /// One flag's answer.
    enum Flag: Sendable {
        case feature(FlagEvaluation)
        case experiment(ExperimentFlag)

        func write(to writer: inout JSONWriter) {
            switch self {
            case .feature(let evaluation): evaluation.write(to: &writer)
            case .experiment(let flag): flag.write(to: &writer)
            }
        }
    }

    /// Every flag for one target, and the ETag: the hash of exactly the bytes of
    /// `{"flags": [...]}` (the features', then the experiments' by key), as
    /// `BulkEvaluation.etag` is of the features alone, which it equals for an app without
    /// experiments. A stop, a change of a device's variant or exposure, changes it.
    struct Bulk: Sendable {
        var features: [FlagEvaluation]
        var experiments: [ExperimentFlag]
        var etag: String

        init(features: [FlagEvaluation], experiments: [ExperimentFlag]) {
            self.features = features
            self.experiments = experiments
            var writer = JSONWriter(capacity: 64 + (features.count + experiments.count) * 160)
            writer.objectStart()
            writer.key("flags")
            Self.writeFlags(features: features, experiments: experiments, to: &writer)
            writer.objectEnd()
            self.etag = "\"" + String(FNV1a.hash(writer.bytes), radix: 16) + "\""
        }

        /// `[...]`: the features' flags, then the experiments'.
        func writeFlags(to writer: inout JSONWriter) {
            Self.writeFlags(features: features, experiments: experiments, to: &writer)
        }

        private static func writeFlags(features: [FlagEvaluation], experiments: [ExperimentFlag], to writer: inout JSONWriter) {
            writer.arrayStart()
            for flag in features { flag.write(to: &writer) }
            for flag in experiments { flag.write(to: &writer) }
            writer.arrayEnd()
        }
    }

    /// The flag `key` for the target: the feature of that key, else the experiment; nil when
    /// the app has neither. An experiment evaluated for a device records its exposure as
    /// `GET /v1/users/{u}/devices/{d}/experiments/{key}` does; without a device it exposes
    /// nothing.
    func evaluateFlag(appID: UUID, key: String, target: OFREPTarget) async throws(ServiceError) -> Flag? {
        if let feature = try await features.evaluateFlag(appID: appID, key: key, target: target) {
            return .feature(feature)
        }
        // A key no experiment can have is not looked up.
        guard (try? ClientText.checkKey(key, field: "key", bytes: ExperimentDefinition.keyBytes)) != nil else { return nil }
        do throws(ServiceError) {
            if let deviceID = target.deviceID {
                let answer = try await experiments.evaluateExperiment(appID: appID, key: key, userID: target.userID, deviceID: deviceID)
                return .experiment(ExperimentFlag(answer))
            }
            return .experiment(ExperimentFlag(withoutDevice: try await experiments.experiment(appID: appID, key: key)))
        } catch {
            if error.code == .notFound { return nil }
            throw error
        }
    }

    /// Every flag of the app for the target: every feature, then every experiment by key
    /// (exposures recorded for a device as single evaluations record them).
    func evaluateFlags(appID: UUID, target: OFREPTarget) async throws(ServiceError) -> Bulk {
        let bulk = try await features.evaluateFlags(appID: appID, target: target)
        var flags: [ExperimentFlag]
        if let deviceID = target.deviceID {
            flags = try await experiments.evaluateExperiments(appID: appID, userID: target.userID, deviceID: deviceID).map { ExperimentFlag($0) }
        } else {
            flags = try await experiments.experiments(appID: appID).map { ExperimentFlag(withoutDevice: $0) }
        }
        flags.sort { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
        return Bulk(features: bulk.flags, experiments: flags)
    }
}
