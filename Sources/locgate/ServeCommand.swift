import ArgumentParser
import EventLog
import Foundation
import Hummingbird
import LocationGateHTTP
import LocationGateSchema
import LocationGateService
import Logging
import Metrics
import PostgresClient
import Prometheus

/// `locgate serve`: the HTTP API and OFREP. Refuses to start while migrations are pending;
/// SIGTERM or SIGINT drain in-flight requests and stop (swift-service-lifecycle).
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "serve", abstract: "Serve the HTTP API and OFREP.")

    @OptionGroup var database: DatabaseOptions

    @Option(help: "Address to listen on") var host = "127.0.0.1"
    @Option(help: "Port to listen on") var port = 8080
    @Option(help: "Database connections") var poolSize = 8
    @Option(help: "Per-key requests per second (default: $LOCGATE_RATE_LIMIT, off when unset)") var rateLimit: Double?
    @Option(help: "Per-key burst (default: one second's worth)") var rateLimitBurst: Double?

    func run() async throws {
        try await CommandFailure.reporting { try await runCommand() }
    }

    private func runCommand() async throws {
        LocgateCommand.bootstrapLogging(level: database.level)
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
        let logger = Logger(label: "locgate")
        let pool = try database.makePool(size: poolSize, logger: logger)
        let pending = try await SchemaMigrator(pool: pool, migrations: try SchemaMigrations.load(), logger: logger).pending()
        guard pending.isEmpty else {
            await pool.close()
            throw MigrationError.pending(pending.map(\.name))
        }
        let environment = ProcessInfo.processInfo.environment
        var configuration = ServerConfiguration()
        configuration.host = host
        configuration.port = port
        configuration.adminToken = environment["LOCGATE_ADMIN_TOKEN"]
        configuration.rateLimit = rateLimit ?? environment["LOCGATE_RATE_LIMIT"].flatMap(Double.init)
        configuration.rateLimitBurst = rateLimitBurst
        if configuration.adminToken?.isEmpty ?? true {
            logger.warning("LOCGATE_ADMIN_TOKEN is not set: POST /v1/apps is refused; use `locgate apps create`")
        }
        let service = GateService(pool: pool, logger: logger)
        let app = buildApplication(service: service, configuration: configuration, registry: registry, logger: logger)
        try await app.runService()
        await pool.close()
    }
}
