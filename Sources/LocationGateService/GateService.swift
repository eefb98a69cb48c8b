import EventLog
import Foundation
import LocationAuthorization
import Logging
import LocationGateSchema
import Metrics
import PostgresClient
import ServiceLifecycle

/// The gating service without HTTP: the composition root. It builds the shared parts once
/// (the pool's stores, the device cache, the feature and key catalogs, the change hub, the
/// costly work's bounds) and one type per capability over the parts it needs, each in its own
/// folder with the narrow protocol (face) the HTTP layer calls it through: `catalog`
/// (`CatalogService`), `events` (`EventIngest`), `gates` (`GateReading`, `OFREPEvaluating`),
/// `audit` (`HistoryReading`), `analytics` (`AnalyticsReading`), `push` (`ChangeFeedReading`),
/// `erasure` (`ErasureService`), `retention` (`RetentionService`), `export` (`ExportService`),
/// `experiments` (`ExperimentsFace`), `health`, and the admin trail and dashboard sessions. The
/// stores stay inside the module: callers get typed requests and results, never the pool.
public final class GateService: Sendable {
    let pool: PostgresConnectionPool
    let log: EventLog
    let cache: DeviceStateCache
    let features: FeatureCatalog
    let keys: APIKeys
    /// Whether this process's caches may answer (see `CacheCoherence`).
    let coherence: CacheCoherence
    /// Change hints for the push streams (`push.hub`).
    let hub = ChangeHub()
    /// Marks the NOTIFYs of this service's appends (`StreamChange.originLine`), so that its own
    /// follower skips them: `events` has stored the new states in the cache and woken the push
    /// streams itself. One per service, not per process: tests run several in one process.
    let appendOrigin = UUID().lowercasedText
    public let logger: Logger
    /// Group commits in flight at once, by default.
    public static let defaultGroupCommits = 4
    /// The bound `locgate serve` applies unless `LOCGATE_MAX_CLOCK_SKEW` says otherwise: 24 hours.
    public static let defaultMaxClockSkew: Duration = .seconds(86_400)

    public let catalog: CatalogCapability
    public let events: IngestCapability
    public let gates: GatesCapability
    public let audit: AuditCapability
    public let analytics: AnalyticsCapability
    public let push: PushCapability
    public let erasure: ErasureCapability
    public let retention: RetentionCapability
    public let export: ExportCapability
    public let experiments: ExperimentsCapability
    public let health: HealthCapability
    /// The admin audit trail, on the primary (an entry is readable as soon as its change is).
    public let adminAudit: AdminAuditLog
    /// The dashboard's sessions, on the primary (a sign-out or a revocation is seen at once).
    public let dashboardSessions: DashboardSessions

    /// - Parameters:
    ///   - cacheByteBudget: the device cache's memory bound (`--cache-memory`).
    ///   - followsChanges: true when a `CacheFollower` runs beside the service (a server that
    ///     shares its database with other processes): caches then answer only while its
    ///     notifications are known to arrive. False for a process that is the only writer
    ///     (the CLI, single-process tests).
    ///   - maxQueuedEvents: events that may wait for a group commit; more are 503 `overloaded`.
    ///   - readPool: a streaming standby for history, state as of, analytics and the dashboard's
    ///     counts (`LOCGATE_READ_DATABASE_URL`); nil reads the primary.
    ///   - groupCommits: group-commit transactions in flight at once (`--group-commits`).
    ///   - clock: the clock of group commit's watcher and queue timeout (tests inject one).
    ///   - maxClockSkew: how far ahead of the server's clock `occurredAt` may be; nil (the
    ///     command line's own appends, such as `locgate simulate`) takes any time of SPEC §1's
    ///     range. `locgate serve` passes `defaultMaxClockSkew` or `LOCGATE_MAX_CLOCK_SKEW`.
    public init(
        pool: PostgresConnectionPool, logger: Logger, cacheByteBudget: Int = DeviceStateCache.defaultByteBudget,
        followsChanges: Bool = false, maxQueuedEvents: Int = 20_000, readPool: PostgresConnectionPool? = nil,
        groupCommits: Int = GateService.defaultGroupCommits, clock: any Clock<Duration> = ContinuousClock(),
        maxClockSkew: Duration? = nil
    ) {
        let coherence = CacheCoherence(alwaysFollowing: !followsChanges)
        let log = EventLog(pool: pool, logger: logger)
        let reads = StandbyReads(primary: pool, standby: readPool)
        let gateStore = GateStore(pool: pool)
        let cache = DeviceStateCache(byteBudget: cacheByteBudget, coherence: coherence)
        let experimentCatalog = ExperimentCatalog(pool: pool, coherence: coherence)
        let features = FeatureCatalog(pool: pool, coherence: coherence, experiments: experimentCatalog)
        let keys = APIKeys(pool: pool, coherence: coherence)
        // Previews, exports, analytics and results: at most two of each kind per app at once,
        // within a quarter of the pool (SPEC §5 "Resources"). One for all capabilities.
        let costly = CostlyWork(connections: max(1, pool.size / 4))
        // Decoded states of `device_state_kinds`: previews and coverage share them.
        let stateKinds = StateKindCache()
        let committer = GroupCommitter(
            pool: pool, maxInFlight: max(1, min(groupCommits, pool.size)), maxQueuedEvents: maxQueuedEvents,
            queueTimeout: pool.waitTimeout * 2, clock: clock, origin: appendOrigin)
        (self.pool, self.log, self.cache, self.features, self.keys, self.coherence, self.logger) =
            (pool, log, cache, features, keys, coherence, logger)
        catalog = CatalogCapability(
            apps: AppRegistry(pool: pool), keys: keys, features: features, stateKinds: stateKinds, reads: reads, costly: costly)
        events = IngestCapability(
            log: log, cache: cache, hub: hub, committer: committer, appendOrigin: appendOrigin, maxClockSkew: maxClockSkew)
        gates = GatesCapability(cache: cache, features: features, gateStore: gateStore)
        audit = AuditCapability(pool: pool, auditStore: AuditStore(reads: reads, logger: logger), reads: reads, features: features)
        analytics = AnalyticsCapability(
            pool: pool, reads: reads, features: features, stateKinds: stateKinds, costly: costly, logger: logger)
        push = PushCapability(pool: pool, log: log, hub: hub, coherence: coherence)
        erasure = ErasureCapability(
            pool: pool, cache: cache, hub: hub, exposures: experimentCatalog.exposures, followsChanges: followsChanges, logger: logger)
        retention = RetentionCapability(pool: pool, logger: logger)
        export = ExportCapability(pool: pool, log: log, gateStore: gateStore, features: features, costly: costly)
        experiments = ExperimentsCapability(
            catalog: experimentCatalog, pool: pool,
            committer: ExposureCommitter(pool: pool, maxInFlight: max(1, min(2, pool.size)), queueTimeout: pool.waitTimeout * 2, clock: clock),
            gates: gates, costly: costly, logger: logger)
        health = HealthCapability(
            pool: pool, log: log, cache: cache, keys: keys, committer: committer, coherence: coherence, logger: logger)
        adminAudit = AdminAuditLog(pool: pool)
        dashboardSessions = DashboardSessions(pool: pool)
    }

    /// The background work every server runs beside its routes: the analytics rollup and the
    /// partition keeper, the decision forms' writer, the experiments' tally and guard, erasure
    /// and retention (the cache follower is built by the HTTP layer, which owns its lifetime).
    public func backgroundServices(logger: Logger, retentionInterval: Duration = .seconds(3600)) -> [any Service] {
        [AnalyticsRollup(pool: pool, logger: logger), PartitionKeeper(pool: pool, logger: logger),
         DecisionFormWriter(pool: pool, logger: logger),
         ExperimentTally(pool: pool, logger: logger), experiments.guardian(logger: logger),
         ErasureWorker(erasure: erasure, logger: logger), retention.retentionWorker(logger: logger, interval: retentionInterval)]
    }
}
