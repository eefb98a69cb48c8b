import EventLog
import Foundation
import Hummingbird
import LocationGateSchema
import LocationGateService
import Metrics
import Prometheus

/// `/healthz` (the process is up), `/readyz` (database, migrations, cache following the log)
/// and `/metrics` (Prometheus text). None needs a key.
struct HealthRoutes {
    let service: GateService
    let follower: CacheFollower?
    let registry: PrometheusCollectorRegistry?

    func register(on router: Router<AppRequestContext>) {
        router.get("/healthz") { _, _ in
            try JSONResponse.make(.ok, ["status": "ok"])
        }
        router.get("/readyz", use: ready)
        router.get("/metrics") { _, _ -> Response in
            guard let registry else {
                return JSONResponse.make(.ok, data: Data(), contentType: "text/plain; version=0.0.4")
            }
            // Gauges read at scrape time: the cache size, and the projection lag (events
            // committed but not yet readable in global order, which followers wait on).
            Gauge(label: "locgate_devices_cached").record(service.cache.count)
            if let lag = try? await service.log.health().unreadableEvents {
                Gauge(label: "locgate_projection_lag_events").record(lag)
            }
            return JSONResponse.make(.ok, data: Data(registry.emitToBuffer()), contentType: "text/plain; version=0.0.4")
        }
    }

    struct Readiness: Encodable {
        var ready: Bool
        var database: Bool
        var pendingMigrations: [String]
        var cacheFollowing: Bool
        var unreadableEvents: Int64?
        var devicesCached: Int
    }

    @Sendable func ready(_ request: Request, context: AppRequestContext) async throws -> Response {
        var report = Readiness(
            ready: false, database: false, pendingMigrations: [], cacheFollowing: follower?.isCaughtUp ?? true,
            unreadableEvents: nil, devicesCached: service.cache.count)
        do {
            let migrator = SchemaMigrator(pool: service.pool, migrations: try SchemaMigrations.load(), logger: context.logger)
            report.pendingMigrations = try await migrator.pending().map(\.name)
            report.unreadableEvents = try await service.log.health().unreadableEvents
            report.database = true
        } catch {
            report.database = false
        }
        report.ready = report.database && report.pendingMigrations.isEmpty && report.cacheFollowing
        return try JSONResponse.make(report.ready ? .ok : .serviceUnavailable, report)
    }
}
