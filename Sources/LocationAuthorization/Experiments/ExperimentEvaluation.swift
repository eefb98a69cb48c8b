import Foundation

/// Why a device got its variant (SPEC §16 "Evaluation" `reason`).
public enum ExperimentReason: String, Sendable, Hashable, Codable, CaseIterable {
    /// Exposed now or before: the variant of its bucket at the exposure, kept since.
    case assigned
    /// Not exposed, and not eligible now: the control, nothing recorded.
    case notEligible
    /// The experiment is stopped: the winner, nothing recorded.
    case stopped

    /// The reason an OFREP evaluation gives: `SPLIT` when assigned, `DEFAULT` when not
    /// eligible, `STATIC` when stopped.
    public var ofrepReason: String {
        switch self {
        case .assigned: "SPLIT"
        case .notEligible: "DEFAULT"
        case .stopped: "STATIC"
        }
    }
}

/// A unit's exposure to an experiment, as stored (`experiment_exposures`): its unit, the variant
/// it was assigned and when.
public struct ExperimentExposure: Sendable, Hashable {
    public var unit: ExperimentUnit
    public var variant: String
    public var exposedAt: Date

    public init(unit: ExperimentUnit, variant: String, exposedAt: Date) {
        self.unit = unit
        self.variant = variant
        self.exposedAt = exposedAt
    }
}

/// The answer to one evaluation of an experiment for one device, and the exposure it makes.
public struct ExperimentEvaluation: Sendable, Hashable {
    public let variant: String
    public let reason: ExperimentReason
    /// When the device was exposed; nil without an exposure, and nil too when this evaluation
    /// makes the exposure (`exposes`): the caller answers with the time it recorded.
    public let exposedAt: Date?
    /// The unit to record as exposed to `variant`, durably, before the answer; nil when no
    /// exposure is due.
    public let exposes: ExperimentUnit?

    public init(variant: String, reason: ExperimentReason, exposedAt: Date?, exposes: ExperimentUnit?) {
        self.variant = variant
        self.reason = reason
        self.exposedAt = exposedAt
        self.exposes = exposes
    }
}

extension Experiment {
    /// Evaluates the experiment for a device (SPEC §16), without I/O: the caller has looked up
    /// the device's current exposure and records the one this asks for.
    ///
    /// - `state`: the device's state now.
    /// - `exposure`: the device's current exposure, if any: the first of
    ///   `ExperimentUnit.candidates` with an exposure no reinstall replaced.
    /// - `unit`: the unit a new exposure is filed under (`ExperimentUnit(state:userID:deviceID:)`).
    ///
    /// In order: a stopped experiment answers the winner, reason `stopped`, with `exposedAt`
    /// where the device was exposed, and exposes nothing. An exposed device keeps its variant,
    /// reason `assigned`, whatever the weights or its state have become (sticky: eligibility is
    /// checked only until a device is exposed). A device not eligible now gets the control,
    /// reason `notEligible`, and no exposure. Any other device is assigned its bucket's variant
    /// and exposed.
    public func evaluate(
        state: DeviceState, exposure: ExperimentExposure?, unit: ExperimentUnit, buckets: ExperimentBuckets
    ) -> ExperimentEvaluation {
        if self.state == .stopped {
            return ExperimentEvaluation(
                variant: winner ?? definition.control, reason: .stopped, exposedAt: exposure?.exposedAt, exposes: nil)
        }
        if let exposure {
            return ExperimentEvaluation(variant: exposure.variant, reason: .assigned, exposedAt: exposure.exposedAt, exposes: nil)
        }
        guard definition.eligibility.admits(state) else {
            return ExperimentEvaluation(variant: definition.control, reason: .notEligible, exposedAt: nil, exposes: nil)
        }
        return ExperimentEvaluation(variant: buckets.variant(for: unit), reason: .assigned, exposedAt: nil, exposes: unit)
    }
}
