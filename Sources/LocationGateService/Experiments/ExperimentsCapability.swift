import EventLog
import Foundation
import LocationAuthorization
import Logging
import PostgresClient

/// The experiments of SPEC §16 behind `ExperimentsFace`: their definitions and changes
/// (`ExperimentCatalog`), evaluations that expose devices, and results from the maintained
/// counts (`ExperimentTally`).
///
/// An evaluation reads what a gate reads, from memory where it can: the device's state from
/// the device cache (`GatesCapability.device`), its `installId` and its exposure from
/// `ExposureMemory`, the definition from the catalog's cache. The decision is the domain's
/// (`Experiment.evaluate`); when it asks for an exposure, the exposure is written and committed
/// before the answer, group-committed with the other first evaluations of the moment
/// (`ExposureCommitter`), and when another server won the race to expose the same unit, its
/// variant is the answer. An exposed device's later evaluations answer from memory.
public final class ExperimentsCapability: ExperimentsFace, DatabaseCalls {
    let catalog: ExperimentCatalog
    let pool: PostgresConnectionPool
    /// First evaluations' exposures share statements (group commit), each answered after its
    /// commit (SPEC §16).
    let committer: ExposureCommitter
    /// A device's state, for its evaluation.
    let gates: GatesCapability
    let costly: CostlyWork
    let logger: Logger

    init(
        catalog: ExperimentCatalog, pool: PostgresConnectionPool, committer: ExposureCommitter, gates: GatesCapability,
        costly: CostlyWork, logger: Logger
    ) {
        self.catalog = catalog
        self.pool = pool
        self.committer = committer
        self.gates = gates
        self.costly = costly
        self.logger = logger
    }

    private var memory: ExposureMemory { catalog.exposures }

    /// The experiments' guard over this pool (SPEC §16), one of a server's background services;
    /// tests call its `checkDue`.
    public func guardian(logger: Logger) -> ExperimentGuardian {
        ExperimentGuardian(pool: pool, catalog: catalog, logger: logger)
    }

    // MARK: - Definitions

    public func putExperiment(appID: UUID, key: String, body: [UInt8], actor: AuditActor) async throws(ServiceError) -> (experiment: Experiment, created: Bool) {
        let definition: ExperimentDefinition
        do {
            definition = try ExperimentDefinition(key: key, body: Data(body))
        } catch {
            throw ServiceError(definition: error)
        }
        let catalog = self.catalog
        return try await database { try await catalog.put(appID: appID, definition: definition, actor: actor) }
    }

    public func experiment(appID: UUID, key: String) async throws(ServiceError) -> Experiment {
        guard let experiment = try await self.experiments(appID: appID).first(where: { $0.key == key }) else {
            throw Self.notFound(key)
        }
        return experiment
    }

    public func experiments(appID: UUID) async throws(ServiceError) -> [Experiment] {
        let catalog = self.catalog
        return try await database { try await catalog.experiments(appID: appID) }
    }

    public func deleteExperiment(appID: UUID, key: String, actor: AuditActor) async throws(ServiceError) {
        let catalog = self.catalog
        let deleted = try await database { try await catalog.delete(appID: appID, key: key, actor: actor) }
        guard deleted else { throw Self.notFound(key) }
    }

    public func stopExperiment(appID: UUID, key: String, winner: String?, actor: AuditActor) async throws(ServiceError) -> Experiment {
        let catalog = self.catalog
        let stopped = try await database {
            try await catalog.stop(appID: appID, key: key, winner: winner, reason: .operator, actor: actor)
        }
        guard let stopped else { throw Self.notFound(key) }
        return stopped
    }

    // MARK: - Evaluations

    public func evaluateExperiment(appID: UUID, key: String, userID: String, deviceID: String) async throws(ServiceError) -> ExperimentAnswer {
        let experiment = try await self.experiment(appID: appID, key: key)
        let stream = StreamKey(appID: appID, userID: userID, deviceID: deviceID)
        let state = try await deviceState(stream)
        // Empty only when the experiment was deleted while it was evaluated.
        guard let answer = try await evaluate([experiment], stream: stream, state: state).first else { throw Self.notFound(key) }
        return answer
    }

    public func evaluateExperiments(appID: UUID, userID: String, deviceID: String) async throws(ServiceError) -> [ExperimentAnswer] {
        let experiments = try await self.experiments(appID: appID)
        guard !experiments.isEmpty else { return [] }
        let stream = StreamKey(appID: appID, userID: userID, deviceID: deviceID)
        let state = try await deviceState(stream)
        return try await evaluate(experiments, stream: stream, state: state)
    }

    /// The device's state now, as the gates read it, with its `installId`, which the device
    /// cache does not keep (`ExposureMemory`): read once per version of the stream.
    private func deviceState(_ stream: StreamKey) async throws(ServiceError) -> DeviceState {
        let entry = try await gates.device(stream)
        var state = entry.state
        guard entry.version > 0 else { return state }
        if let known = memory.installation(stream, atLeast: entry.version) {
            state.installID = known.installID
            return state
        }
        let epoch = memory.epoch
        let pool = self.pool
        let read = try await database {
            try await pool.withConnection { connection in try ExperimentExposures.installation(stream, on: connection) }
        }
        memory.remember(read, stream: stream, epoch: epoch)
        state.installID = read.installID
        return state
    }

    /// Experiments for one device, in their order: the device's current exposures (from
    /// memory, the rest in one read), the domain's decisions, and every exposure they ask for
    /// recorded at once (`ExposureCommitter`: one request, so a bulk evaluation of a new device
    /// waits for one group commit, shared with the other evaluations arriving meanwhile) and
    /// committed before the answer. Where another server won the race to expose a unit, its
    /// variant is the answer. An experiment that changed under the evaluation (stopped,
    /// deleted, its variants made again) is read again once; one deleted meanwhile is left out.
    private func evaluate(
        _ experiments: [Experiment], stream: StreamKey, state: DeviceState, again: Bool = true
    ) async throws(ServiceError) -> [ExperimentAnswer] {
        let exposures = try await currentExposures(experiments.map(\.key), stream: stream, state: state)
        let unit = ExperimentUnit(state: state, userID: stream.userID, deviceID: stream.deviceID)
        var answers: [ExperimentAnswer?] = []
        answers.reserveCapacity(experiments.count)
        var exposing: [(index: Int, exposure: ExposureCommitter.Exposing)] = []
        // The app's id as `ExperimentBuckets(appID:definition:)` writes it, once for them all.
        let appIDText = stream.appID.uuidString.lowercased()
        for (index, experiment) in experiments.enumerated() {
            let buckets = ExperimentBuckets(appIDText: appIDText, key: experiment.key, variants: experiment.definition.variants)
            let evaluation = experiment.evaluate(state: state, exposure: exposures[experiment.key], unit: unit, buckets: buckets)
            if let exposes = evaluation.exposes {
                exposing.append((index, ExposureCommitter.Exposing(
                    appID: stream.appID, experiment: experiment.key, unit: exposes, variant: evaluation.variant, stream: stream)))
                answers.append(nil)
            } else {
                answers.append(ExperimentAnswer(
                    experiment: experiment.key, variant: evaluation.variant, reason: evaluation.reason, exposedAt: evaluation.exposedAt))
            }
        }
        guard !exposing.isEmpty else { return answers.compactMap { $0 } }
        let epoch = memory.epoch
        let committer = self.committer
        let asked = exposing.map { $0.exposure }
        let recorded = try await database { try await committer.record(asked) }
        var changed: Set<String> = []
        for ((index, exposure), stored) in zip(exposing, recorded) {
            guard let stored else {
                changed.insert(exposure.experiment)
                continue
            }
            memory.remember(stored, stream: stream, experiment: exposure.experiment, installID: state.installID, epoch: epoch)
            answers[index] = ExperimentAnswer(experiment: exposure.experiment, variant: stored.variant, reason: .assigned, exposedAt: stored.exposedAt)
        }
        guard !changed.isEmpty else { return answers.compactMap { $0 } }
        // Not running as read: what each is now decides (a stop answers the winner).
        catalog.invalidate(stream.appID)
        guard again else {
            throw ServiceError(.overloaded, "the experiment changed while the device was evaluated; try again")
        }
        let fresh = try await self.experiments(appID: stream.appID).filter { changed.contains($0.key) }
        var reevaluated: [String: ExperimentAnswer] = [:]
        for answer in try await evaluate(fresh, stream: stream, state: state, again: false) {
            reevaluated[answer.experiment] = answer
        }
        for (index, experiment) in experiments.enumerated() where answers[index] == nil {
            answers[index] = reevaluated[experiment.key]
        }
        return answers.compactMap { $0 }
    }

    /// The device's current exposures to the experiments `keys` (`ExperimentUnit.candidates`),
    /// by key: from memory when known, the others in one read. Remembered only when filed under
    /// the unit the device would be exposed as now, so that I1's reinstall, which replaces it,
    /// never leaves it in memory (`ExposureMemory`).
    private func currentExposures(_ keys: [String], stream: StreamKey, state: DeviceState) async throws(ServiceError) -> [String: ExperimentExposure] {
        var found: [String: ExperimentExposure] = [:]
        var missing: [String] = []
        for key in keys {
            if let known = memory.exposure(stream, experiment: key, installID: state.installID) {
                found[key] = known
            } else {
                missing.append(key)
            }
        }
        guard !missing.isEmpty else { return found }
        let candidates = ExperimentUnit.candidates(state: state, userID: stream.userID, deviceID: stream.deviceID)
        let epoch = memory.epoch
        let pool = self.pool
        let appID = stream.appID
        let keys = missing
        let read = try await database {
            try await pool.withConnection { connection in
                try ExperimentExposures.current(appID: appID, keys: keys, units: candidates, on: connection)
            }
        }
        let unit = ExperimentUnit(state: state, userID: stream.userID, deviceID: stream.deviceID)
        for (key, exposure) in read {
            found[key] = exposure
            if exposure.unit == unit {
                memory.remember(exposure, stream: stream, experiment: key, installID: state.installID, epoch: epoch)
            }
        }
        return found
    }

    // MARK: - Results

    public func experimentResults(appID: UUID, key: String) async throws(ServiceError) -> ExperimentResults {
        let experiment = try await self.experiment(appID: appID, key: key)
        let pool = self.pool
        let logger = self.logger
        let costly = self.costly
        let counts = try await database {
            // Costly work, as analytics are: the catch-up reads the log (SPEC §5 "Resources").
            try await costly.run(.analytics, appID: appID) {
                try await ExperimentTally(pool: pool, logger: logger).catchUp(waitForInFlightCommits: true)
                return try await pool.withConnection { connection in try ExperimentCounts.read(appID: appID, key: key, on: connection) }
            }
        }
        return ExperimentResults(
            experiment: key, state: experiment.state, variants: VariantResult.rows(of: experiment.definition, counts: counts))
    }

    static func notFound(_ key: String) -> ServiceError {
        ServiceError(.notFound, "no experiment \(key.prefix(128))")
    }
}
