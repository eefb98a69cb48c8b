import Foundation
import LocationAuthorization

/// The experiments face of the service (SPEC §16): what the HTTP layer, OFREP, the dashboard
/// and the CLI call. `ExperimentsCapability` implements it, its own type over the pool; every error
/// is a `ServiceError` (`keyInUse`, `experimentRunning`, `experimentStopped` are 409s).
public protocol ExperimentsFace: Sendable {
    /// Creates or replaces an experiment from a PUT body (checked strictly, nothing stored when
    /// refused); `created` is true when it is new (201), false when it replaced one (200).
    func putExperiment(appID: UUID, key: String, body: [UInt8], actor: AuditActor) async throws(ServiceError) -> (experiment: Experiment, created: Bool)
    /// One experiment; `notFound` when the app has none with that key.
    func experiment(appID: UUID, key: String) async throws(ServiceError) -> Experiment
    /// The app's experiments, sorted by key.
    func experiments(appID: UUID) async throws(ServiceError) -> [Experiment]
    /// Removes an experiment with its exposures and results; `notFound` when there is none.
    func deleteExperiment(appID: UUID, key: String, actor: AuditActor) async throws(ServiceError)
    /// Stops a running experiment with `winner` (nil: the control), reason `operator`.
    func stopExperiment(appID: UUID, key: String, winner: String?, actor: AuditActor) async throws(ServiceError) -> Experiment
    /// Evaluates an experiment for one device, recording its exposure durably before answering
    /// when this is its first eligible evaluation; `notFound` for an unknown key.
    func evaluateExperiment(appID: UUID, key: String, userID: String, deviceID: String) async throws(ServiceError) -> ExperimentAnswer
    /// Every running or stopped experiment of the app evaluated for one device (OFREP's bulk
    /// evaluation), exposures recorded as single evaluations record them.
    func evaluateExperiments(appID: UUID, userID: String, deviceID: String) async throws(ServiceError) -> [ExperimentAnswer]
    /// The results from the maintained counts, catching up with every answer acknowledged
    /// before the call; `notFound` for an unknown key.
    func experimentResults(appID: UUID, key: String) async throws(ServiceError) -> ExperimentResults
}

/// One evaluation's answer: `{"experiment", "variant", "reason", "exposedAt"}` (SPEC §16).
public struct ExperimentAnswer: Sendable, Hashable {
    public var experiment: String
    public var variant: String
    public var reason: ExperimentReason
    /// Nil without an exposure.
    public var exposedAt: Date?

    public init(experiment: String, variant: String, reason: ExperimentReason, exposedAt: Date?) {
        self.experiment = experiment
        self.variant = variant
        self.reason = reason
        self.exposedAt = exposedAt
    }
}

/// `GET /v1/experiments/{key}/results`: `{"experiment", "state", "variants": [...]}`, the
/// control first, the others as listed.
public struct ExperimentResults: Sendable, Hashable {
    public var experiment: String
    public var state: ExperimentState
    public var variants: [VariantResult]

    public init(experiment: String, state: ExperimentState, variants: [VariantResult]) {
        self.experiment = experiment
        self.state = state
        self.variants = variants
    }
}
