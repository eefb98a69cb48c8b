import EventLog
import Foundation
import Hummingbird
import LocationGateSchema
import LocationGateService
import Metrics
import PostgresClient
import Prometheus
import Synchronization

/// `/healthz` (the process is up; never touches the database), `/readyz` (database,
/// migrations, caches following changes) and `/metrics` (Prometheus text). None needs a key.
/// `/readyz` and `/metrics` cost the same at any log size: the horizon from the snapshot and
/// the planner's row estimate, never a count of the log; and they read the database at most
/// once a second in all (`CachedReading`), however often they are asked.
final class HealthRoutes: Sendable {
    let health: HealthCapability
    let follower: CacheFollower?
    let registry: PrometheusCollectorRegistry?
    let streams: StreamRegistry
    /// Set once no migration is pending: this binary's migrations cannot become pending again.
    private let migrated = Mutex(false)
    /// The log's vitals, read at most once a second for both endpoints.
    private let vitals: CachedReading<EventLogVitals>
    /// Pending migrations, read at most once a second until none is pending.
    private let pending: CachedReading<[String]>

    init(health: HealthCapability, follower: CacheFollower?, registry: PrometheusCollectorRegistry?, streams: StreamRegistry) {
        self.streams = streams
        self.health = health
        self.follower = follower
        self.registry = registry
        self.vitals = CachedReading { [health] in try await health.logVitals() }
        self.pending = CachedReading { [health] in try await health.pendingMigrations() }
    }

    /// Registers the three on the router's table, with their full paths (outside every area).
    func register(on routes: RouteTable) {
        routes.get("/healthz") { _, _ -> [String: String] in
            ["status": "ok"]
        }
        routes.get("/readyz", use: ready)
        routes.get("/metrics") { [self] _, _ -> PreparedBody in
            guard let registry else {
                return PreparedBody(bytes: [UInt8](), contentType: "text/plain; version=0.0.4")
            }
            // Gauges read at scrape time.
            let statistics = health.statistics
            Gauge(label: "locgate_devices_cached").record(statistics.devicesCached)
            Gauge(label: "locgate_device_cache_bytes").record(statistics.cacheBytes)
            Gauge(label: "locgate_device_cache_budget_bytes").record(statistics.cacheByteBudget)
            Gauge(label: "locgate_keys_cached").record(statistics.keysCached)
            Gauge(label: "locgate_pool_waiting").record(statistics.databaseWaiters)
            Gauge(label: "locgate_group_commit_queued_events").record(statistics.queuedEvents)
            Gauge(label: "locgate_caches_following").record(statistics.cachesFollowing ? 1 : 0)
            Gauge(label: "locgate_streams_open").record(streams.open)
            if let vitals = try? await vitals.value() {
                Gauge(label: "locgate_global_order_horizon_lag").record(vitals.horizonLag)
                Gauge(label: "locgate_events_estimated").record(vitals.estimatedEvents)
            }
            return PreparedBody(bytes: registry.emitToBuffer(), contentType: "text/plain; version=0.0.4")
        }
    }

    /// `/readyz`'s answer: 200 when ready, 503 otherwise, with what is not.
    struct Readiness: ResponseEncodable {
        var ready: Bool
        var database: Bool
        var pendingMigrations: [String]
        var cacheFollowing: Bool
        var horizonLag: Int64?
        var devicesCached: Int
    }

    @Sendable func ready(_ request: Request, context: AppRequestContext) async throws -> EditedResponse<Readiness> {
        var report = Readiness(
            ready: false, database: false, pendingMigrations: [], cacheFollowing: follower?.isCaughtUp ?? true,
            horizonLag: nil, devicesCached: health.statistics.devicesCached)
        do {
            if !migrated.withLock({ $0 }) {
                report.pendingMigrations = try await pending.value()
                if report.pendingMigrations.isEmpty { migrated.withLock { $0 = true } }
            }
            report.horizonLag = try await vitals.value().horizonLag
            report.database = true
        } catch {
            report.database = false
        }
        report.ready = report.database && report.pendingMigrations.isEmpty && report.cacheFollowing
        return EditedResponse(status: report.ready ? HTTPResponse.Status.ok : .serviceUnavailable, response: report)
    }
}
