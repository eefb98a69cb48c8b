import Foundation

/// An experiment as the store holds it and the API shows it (SPEC §16): its definition and
/// where it is in its life, running or stopped, with who stopped it and which variant won.
///
/// The changes an experiment allows are methods that take the change and return the new value
/// or throw the refusal, with no I/O: the store reads the experiment, applies the change here
/// under its lock, and writes what comes back (and the audit entry). So the 409s are decided in
/// one place, tested without a database.
public struct Experiment: Sendable, Hashable {
    public private(set) var definition: ExperimentDefinition
    public private(set) var state: ExperimentState
    public let createdAt: Date
    public private(set) var stoppedAt: Date?
    public private(set) var stopReason: ExperimentStopReason?
    /// The variant every device gets once stopped; nil while running.
    public private(set) var winner: String?

    /// A new experiment, running from `createdAt`.
    public init(definition: ExperimentDefinition, createdAt: Date) {
        self.definition = definition
        self.state = .running
        self.createdAt = createdAt
        self.stoppedAt = nil
        self.stopReason = nil
        self.winner = nil
    }

    /// An experiment as stored, read back. The store's constraints keep the fields consistent
    /// (stopped exactly when `stoppedAt`, `stopReason` and `winner` are given).
    public init(
        definition: ExperimentDefinition, state: ExperimentState, createdAt: Date, stoppedAt: Date?,
        stopReason: ExperimentStopReason?, winner: String?
    ) {
        self.definition = definition
        self.state = state
        self.createdAt = createdAt
        self.stoppedAt = stoppedAt
        self.stopReason = stopReason
        self.winner = winner
    }

    public var key: String { definition.key }

    /// A PUT of an existing key: the replacement is taken while running if it changes only the
    /// description, the weights, `eligible` and `guard` (`ExperimentDefinition.fixedFieldChanged`);
    /// else 409 `experimentRunning` naming the field. A stopped experiment takes no change
    /// (409 `experimentStopped`): its results are final, and a changed definition would no
    /// longer describe what was measured. `replacement` has this experiment's key.
    public mutating func replace(with replacement: ExperimentDefinition) throws(ExperimentChangeError) {
        guard state == .running else { throw ExperimentChangeError.stopped }
        if let field = definition.fixedFieldChanged(by: replacement) { throw ExperimentChangeError.running(field) }
        definition = replacement
    }

    /// Stops the experiment: from now every device gets `winner` (nil: the control), no exposure
    /// is recorded, and no answer to a prompt shown from now on counts (an answer to a prompt a
    /// variant showed before the stop still does: SPEC §16, `ExperimentTally`). An operator's
    /// stop (`POST .../stop`) names a winner or takes the control; the guard's always takes the
    /// control. A winner that is no variant is a 422 naming `winner`; a stopped experiment
    /// cannot be stopped again (409 `experimentStopped`, so the guard and an operator racing
    /// make one stop and one audit entry).
    public mutating func stop(winner: String? = nil, reason: ExperimentStopReason, at time: Date) throws(ExperimentChangeError) {
        guard state == .running else { throw ExperimentChangeError.stopped }
        let winner = winner ?? definition.control
        guard definition.hasVariant(winner) else {
            let keys = definition.variantKeys.joined(separator: ", ")
            throw ExperimentChangeError.invalid(EventValidationError.invalid("winner", "\(winner.prefix(64)) is not one of the variants (\(keys))"))
        }
        state = .stopped
        stoppedAt = time
        stopReason = reason
        self.winner = winner
    }

    /// The variant a request without a device gets (OFREP without `deviceId`): the control,
    /// OFREP reason `DEFAULT`; once stopped the winner, `STATIC`. Nothing is exposed.
    public var variantWithoutDevice: (variant: String, ofrepReason: String) {
        if state == .stopped, let winner { return (winner, "STATIC") }
        return (definition.control, "DEFAULT")
    }
}

/// Where an experiment is in its life (SPEC §16 `state`).
public enum ExperimentState: String, Sendable, Hashable, Codable, CaseIterable {
    /// Exposing devices and counting answers.
    case running
    /// Every device gets the winner; nothing more is exposed or counted.
    case stopped
}

/// Who stopped an experiment (SPEC §16 `stopReason`).
public enum ExperimentStopReason: String, Sendable, Hashable, Codable, CaseIterable {
    /// `POST /v1/experiments/{key}/stop`, the CLI or the dashboard.
    case `operator`
    /// The guard, on a variant clearly worse than the control (`ExperimentGuard`).
    case `guard`
}

/// Why a change to an experiment is refused (SPEC §16); the HTTP layer maps each case to its
/// status once.
public enum ExperimentChangeError: Error, Sendable, Hashable, CustomStringConvertible {
    /// 409 `experimentRunning`: a running experiment's PUT changed a field that must stay.
    case running(ExperimentFixedField)
    /// 409 `experimentStopped`: a stopped experiment is changed or stopped again.
    case stopped
    /// 422 `validationFailed` naming the field (a stop's `winner`).
    case invalid(EventValidationError)

    /// The API's error code.
    public var code: String {
        switch self {
        case .running: "experimentRunning"
        case .stopped: "experimentStopped"
        case .invalid: "validationFailed"
        }
    }

    public var description: String {
        switch self {
        case .running(let field): field.message
        case .stopped: "the experiment is stopped and cannot change; delete it, or start another under a new key"
        case .invalid(let error): error.message
        }
    }
}
