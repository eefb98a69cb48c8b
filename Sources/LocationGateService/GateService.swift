import EventLog
import Foundation
import LocationAuthorization
import Logging
import LocationGateSchema
import Metrics
import PostgresClient
import ServiceLifecycle

/// The gating service without HTTP, and the one place its parts are wired together. Each
/// capability lives in its own folder as an extension of this type: `Ingest/` (appends through
/// the projection), `Gates/` (decisions from memory, OFREP's user level included), `Audit/`
/// (history, state as of, replay, verify, archive), `Catalog/` (apps, keys, features),
/// `Analytics/` and `Push/`. Its database handles stay inside the module: callers get typed
/// requests and results, never the pool. What each part of the HTTP API may call is a narrow
/// protocol declared in its capability's folder, with this type's conformance beside it
/// (`EventIngest`, `GateReading`, `OFREPEvaluating`, `HistoryReading`, `AnalyticsReading`,
/// `CatalogService`, `ChangeFeedReading`, `ErasureService`, `RetentionService`).
public final class GateService: Sendable, DatabaseCalls {
    let pool: PostgresConnectionPool
    let log: EventLog
    /// Where reads that may lag go (a standby when one is configured).
    let reads: StandbyReads
    /// Device states for the gates (the primary).
    let gateStore: GateStore
    /// Streams and archive snapshots for history and state as of (the standby when configured).
    let auditStore: AuditStore
    let cache: DeviceStateCache
    public let features: FeatureCatalog
    /// The apps' experiments (SPEC §16), cached and changed beside the features
    /// (`ExperimentService` is their face: `experiments`).
    let experimentCatalog: ExperimentCatalog
    /// First evaluations' exposures share statements (group commit), each answered after its
    /// commit (SPEC §16).
    let exposureCommitter: ExposureCommitter
    public let keys: APIKeys
    public let apps: AppRegistry
    public let logger: Logger
    /// Small appends share transactions (group commit); large batches go alone.
    let committer: GroupCommitter
    /// Batches of at most this many events go through group commit.
    static let groupCommitLimit = 100
    /// Group commits in flight at once, by default.
    public static let defaultGroupCommits = 4

    /// SPEC §5: at most 1,000 events in a batch.
    public static let maxBatchEvents = 1000
    /// SPEC §5: at most 10,000 devices in a gate query, 100 features (none twice), and
    /// 100,000 decisions in all.
    public static let maxQueryDevices = 10_000
    public static let maxQueryFeatures = 100
    public static let maxQueryDecisions = 100_000

    let eventsAppended = Counter(label: "locgate_events_appended_total")
    let erasuresPerformed = Counter(label: "locgate_erasures_performed_total")
    /// Wakes the erasure worker (`ErasureWorker`).
    let erasureSignal = ErasureSignal()
    /// How erasures are paged, bounded and retried (`erasureSettings`), and their metrics.
    let erasureRuntime = ErasureRuntime()
    /// This process among the servers of the database (`server_processes`): erasures are done
    /// once every live one has acknowledged them.
    public let processID = UUID()
    /// A process with a `CacheFollower` shares its database with others: it registers in
    /// `server_processes`, and erasures wait for its acknowledgement.
    let followsChanges: Bool
    let rejections = Counter(label: "locgate_event_batches_rejected_total")
    /// How far ahead of this server's clock an event's `occurredAt` may be (SPEC §14): later is
    /// a 422 naming `occurredAt`. Nil accepts any time in SPEC §1's range.
    let maxClockSkew: Duration?
    /// The bound `locgate serve` applies unless `LOCGATE_MAX_CLOCK_SKEW` says otherwise: 24 hours.
    public static let defaultMaxClockSkew: Duration = .seconds(86_400)

    /// Whether this process's caches may answer (see `CacheCoherence`).
    let coherence: CacheCoherence
    /// Change hints for the push streams (`push.hub`).
    let hub = ChangeHub()
    /// Marks the NOTIFYs of this service's appends (`StreamChange.originLine`), so that its own
    /// follower skips them: `ingest` has stored the new states in the cache and woken the push
    /// streams itself. One per service, not per process: tests run several in one process.
    let appendOrigin = UUID().lowercasedText
    /// Decoded states of `device_state_kinds`, for the dashboard's feature coverage.
    let stateKinds = StateKindCache()
    /// Previews, exports and analytics: at most two of each kind per app at once, within a
    /// quarter of the pool (SPEC §5 "Resources").
    let costly: CostlyWork

    /// Retention (SPEC §13).
    public let retention: RetentionCapability
    /// The admin audit trail, on the primary (an entry is readable as soon as its change is).
    public let adminAudit: AdminAuditLog
    /// The dashboard's sessions, on the primary (a sign-out or a revocation is seen at once).
    public let dashboardSessions: DashboardSessions
    /// What `/readyz` and `/metrics` report.
    public let health: HealthCapability
    /// The change feed and the push streams' hints.
    public let push: PushCapability

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
        self.maxClockSkew = maxClockSkew
        let coherence = CacheCoherence(alwaysFollowing: !followsChanges)
        self.coherence = coherence
        self.followsChanges = followsChanges
        self.pool = pool
        self.log = EventLog(pool: pool, logger: logger)
        self.reads = StandbyReads(primary: pool, standby: readPool)
        self.gateStore = GateStore(pool: pool)
        self.auditStore = AuditStore(reads: reads, logger: logger)
        self.cache = DeviceStateCache(byteBudget: cacheByteBudget, coherence: coherence)
        let experimentCatalog = ExperimentCatalog(pool: pool, coherence: coherence)
        self.experimentCatalog = experimentCatalog
        self.exposureCommitter = ExposureCommitter(
            pool: pool, maxInFlight: max(1, min(2, pool.size)), queueTimeout: pool.waitTimeout * 2, clock: clock)
        self.features = FeatureCatalog(pool: pool, coherence: coherence, experiments: experimentCatalog)
        self.keys = APIKeys(pool: pool, coherence: coherence)
        self.apps = AppRegistry(pool: pool)
        self.costly = CostlyWork(connections: max(1, pool.size / 4))
        self.retention = RetentionCapability(pool: pool, logger: logger)
        self.adminAudit = AdminAuditLog(pool: pool)
        self.dashboardSessions = DashboardSessions(pool: pool)
        self.logger = logger
        self.committer = GroupCommitter(
            pool: pool, maxInFlight: max(1, min(groupCommits, pool.size)), maxQueuedEvents: maxQueuedEvents,
            queueTimeout: pool.waitTimeout * 2, clock: clock, origin: appendOrigin)
        self.push = PushCapability(pool: pool, log: log, hub: hub, coherence: coherence)
        self.health = HealthCapability(
            pool: pool, log: log, cache: cache, keys: keys, committer: committer, coherence: coherence, logger: logger)
    }

    /// The background work every server runs beside its routes: the analytics rollup and the
    /// partition keeper, the decision forms' writer, the experiments' tally and guard, erasure
    /// and retention (the cache follower is built by the HTTP layer, which owns its lifetime).
    public func backgroundServices(logger: Logger, retentionInterval: Duration = .seconds(3600)) -> [any Service] {
        [AnalyticsRollup(pool: pool, logger: logger), PartitionKeeper(pool: pool, logger: logger),
         DecisionFormWriter(pool: pool, logger: logger),
         ExperimentTally(pool: pool, logger: logger), experimentGuardian(logger: logger),
         ErasureWorker(service: self, logger: logger), retention.retentionWorker(logger: logger, interval: retentionInterval)]
    }

    /// The experiments' guard over this service's pool (SPEC §16); tests call its `checkDue`.
    public func experimentGuardian(logger: Logger) -> ExperimentGuardian {
        ExperimentGuardian(pool: pool, catalog: experimentCatalog, logger: logger)
    }

    /// The audit replay over this service's database (and standby, when configured).
    public func replay(appID: UUID?, logger: Logger) -> Replay {
        Replay(pool: pool, readPool: reads.standby, appID: appID, logger: logger)
    }

}
