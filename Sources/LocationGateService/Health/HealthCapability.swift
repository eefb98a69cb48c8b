import EventLog
import LocationGateSchema
import Logging
import PostgresClient

/// What `/readyz` and `/metrics` report of this process: its caches and queues, the log's
/// vitals, the migrations the database still lacks. Reads only: no request changes anything
/// through it.
public final class HealthCapability: Sendable {
    let pool: PostgresConnectionPool
    let log: EventLog
    let cache: DeviceStateCache
    let keys: APIKeys
    let committer: GroupCommitter
    let coherence: CacheCoherence
    let logger: Logger

    init(
        pool: PostgresConnectionPool, log: EventLog, cache: DeviceStateCache, keys: APIKeys, committer: GroupCommitter,
        coherence: CacheCoherence, logger: Logger
    ) {
        self.pool = pool
        self.log = log
        self.cache = cache
        self.keys = keys
        self.committer = committer
        self.coherence = coherence
        self.logger = logger
    }

    /// What `/metrics` and `/readyz` report of this process.
    public struct Statistics: Sendable {
        public var devicesCached: Int
        public var cacheBytes: Int
        public var cacheByteBudget: Int
        public var keysCached: Int
        public var databaseWaiters: Int
        public var queuedEvents: Int
        public var cachesFollowing: Bool
    }

    public var statistics: Statistics {
        Statistics(
            devicesCached: cache.count, cacheBytes: cache.bytes, cacheByteBudget: cache.byteBudget,
            keysCached: keys.cachedCount, databaseWaiters: pool.waiting, queuedEvents: committer.queuedEvents,
            cachesFollowing: coherence.isFollowing)
    }

    /// Events waiting for a group commit now.
    public var queuedEvents: Int { committer.queuedEvents }

    /// The log's health figures (global-order horizon lag, estimated events).
    public func logVitals() async throws -> EventLogVitals { try await log.vitals() }

    /// Migrations the database still lacks (empty when the schema is current).
    public func pendingMigrations() async throws -> [String] {
        try await SchemaMigrator(pool: pool, migrations: try SchemaMigrations.load(), logger: logger).pending().map(\.name)
    }

    /// The database this process's pool connects to, when its configuration names one.
    public var databaseName: String? { pool.configuration.overrides["dbname"] }
}
