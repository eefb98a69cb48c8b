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
/// the device cache (`GateService.device`), its `installId` and its exposure from
/// `ExposureMemory`, the definition from the catalog's cache. The decision is the domain's
/// (`Experiment.evaluate`); when it asks for an exposure, the exposure is written and committed
/// before the answer, and when another server won the race to expose the same unit, its
/// variant is the answer.
public struct ExperimentService: ExperimentsFace {
    let service: GateService

    init(service: GateService) {
        self.service = service
    }

    private var catalog: ExperimentCatalog { service.experimentCatalog }
    private var memory: ExposureMemory { service.experimentCatalog.exposures }
    private var pool: PostgresConnectionPool { service.pool }

    // MARK: - Definitions

    public func putExperiment(appID: UUID, key: String, body: [UInt8], actor: AuditActor) async throws(ServiceError) -> (experiment: Experiment, created: Bool) {
        let definition: ExperimentDefinition
        do {
            definition = try ExperimentDefinition(key: key, body: Data(body))
        } catch {
            throw ServiceError(definition: error)
        }
        let catalog = self.catalog
        return try await service.database { try await catalog.put(appID: appID, definition: definition, actor: actor) }
    }

    public func experiment(appID: UUID, key: String) async throws(ServiceError) -> Experiment {
        guard let experiment = try await self.experiments(appID: appID).first(where: { $0.key == key }) else {
            throw Self.notFound(key)
        }
        return experiment
    }

    public func experiments(appID: UUID) async throws(ServiceError) -> [Experiment] {
        let catalog = self.catalog
        return try await service.database { try await catalog.experiments(appID: appID) }
    }

    public func deleteExperiment(appID: UUID, key: String, actor: AuditActor) async throws(ServiceError) {
        let catalog = self.catalog
        let deleted = try await service.database { try await catalog.delete(appID: appID, key: key, actor: actor) }
        guard deleted else { throw Self.notFound(key) }
    }

    public func stopExperiment(appID: UUID, key: String, winner: String?, actor: AuditActor) async throws(ServiceError) -> Experiment {
        let catalog = self.catalog
        let stopped = try await service.database {
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
        return try await evaluate(experiment, stream: stream, state: state)
    }

    public func evaluateExperiments(appID: UUID, userID: String, deviceID: String) async throws(ServiceError) -> [ExperimentAnswer] {
        let experiments = try await self.experiments(appID: appID)
        guard !experiments.isEmpty else { return [] }
        let stream = StreamKey(appID: appID, userID: userID, deviceID: deviceID)
        let state = try await deviceState(stream)
        var answers: [ExperimentAnswer] = []
        answers.reserveCapacity(experiments.count)
        for experiment in experiments {
            answers.append(try await evaluate(experiment, stream: stream, state: state))
        }
        return answers
    }

    /// The device's state now, as the gates read it, with its `installId`, which the device
    /// cache does not keep (`ExposureMemory`): read once per version of the stream.
    private func deviceState(_ stream: StreamKey) async throws(ServiceError) -> DeviceState {
        let entry = try await service.device(stream)
        var state = entry.state
        guard entry.version > 0 else { return state }
        if let known = memory.installation(stream, atLeast: entry.version) {
            state.installID = known.installID
            return state
        }
        let epoch = memory.epoch
        let pool = self.pool
        let read = try await service.database {
            try await pool.withConnection { connection in try ExperimentExposures.installation(stream, on: connection) }
        }
        memory.remember(read, stream: stream, epoch: epoch)
        state.installID = read.installID
        return state
    }

    /// One experiment for one device: its current exposure, the domain's decision, and the
    /// exposure recorded when the decision asks for one. When the experiment changed under the
    /// evaluation (stopped, deleted, its variants made again), it is read again once.
    private func evaluate(
        _ experiment: Experiment, stream: StreamKey, state: DeviceState, again: Bool = true
    ) async throws(ServiceError) -> ExperimentAnswer {
        let exposure = try await currentExposure(experiment.key, stream: stream, state: state)
        let unit = ExperimentUnit(state: state, userID: stream.userID, deviceID: stream.deviceID)
        let evaluation = experiment.evaluate(
            state: state, exposure: exposure, unit: unit, buckets: ExperimentBuckets(appID: stream.appID, definition: experiment.definition))
        guard let exposing = evaluation.exposes else {
            return ExperimentAnswer(experiment: experiment.key, variant: evaluation.variant, reason: evaluation.reason, exposedAt: evaluation.exposedAt)
        }
        let epoch = memory.epoch
        let pool = self.pool
        let key = experiment.key
        let variant = evaluation.variant
        let recorded = try await service.database {
            try await pool.withConnection { connection in
                try ExperimentExposures.record(appID: stream.appID, key: key, unit: exposing, variant: variant, stream: stream, on: connection)
            }
        }
        if let recorded {
            memory.remember(recorded, stream: stream, experiment: key, installID: state.installID, epoch: epoch)
            return ExperimentAnswer(experiment: key, variant: recorded.variant, reason: .assigned, exposedAt: recorded.exposedAt)
        }
        // Not running as read: what it is now decides (a stop answers the winner).
        catalog.invalidate(stream.appID)
        guard again else {
            throw ServiceError(.overloaded, "the experiment changed while the device was evaluated; try again")
        }
        let fresh = try await self.experiment(appID: stream.appID, key: key)
        return try await evaluate(fresh, stream: stream, state: state, again: false)
    }

    /// The device's current exposure to the experiment (`ExperimentUnit.candidates`), from
    /// memory when known. Remembered only when it is filed under the unit the device would be
    /// exposed as now, so that I1's reinstall, which replaces it, never leaves it in memory
    /// (`ExposureMemory`).
    private func currentExposure(_ key: String, stream: StreamKey, state: DeviceState) async throws(ServiceError) -> ExperimentExposure? {
        if let known = memory.exposure(stream, experiment: key, installID: state.installID) { return known }
        let candidates = ExperimentUnit.candidates(state: state, userID: stream.userID, deviceID: stream.deviceID)
        let epoch = memory.epoch
        let pool = self.pool
        let found = try await service.database {
            try await pool.withConnection { connection in
                try ExperimentExposures.current(appID: stream.appID, key: key, units: candidates, on: connection)
            }
        }
        if let found, found.unit == ExperimentUnit(state: state, userID: stream.userID, deviceID: stream.deviceID) {
            memory.remember(found, stream: stream, experiment: key, installID: state.installID, epoch: epoch)
        }
        return found
    }

    // MARK: - Results

    public func experimentResults(appID: UUID, key: String) async throws(ServiceError) -> ExperimentResults {
        let experiment = try await self.experiment(appID: appID, key: key)
        let pool = self.pool
        let logger = service.logger
        let counts = try await service.database {
            try await ExperimentTally(pool: pool, logger: logger).catchUp(waitForInFlightCommits: true)
            return try await pool.withConnection { connection in try ExperimentCounts.read(appID: appID, key: key, on: connection) }
        }
        return ExperimentResults(
            experiment: key, state: experiment.state, variants: VariantResult.rows(of: experiment.definition, counts: counts))
    }

    static func notFound(_ key: String) -> ServiceError {
        ServiceError(.notFound, "no experiment \(key.prefix(128))")
    }
}

extension GateService {
    /// The experiments face (SPEC §16), over this service's pool and caches.
    public var experiments: ExperimentService { ExperimentService(service: self) }
}
