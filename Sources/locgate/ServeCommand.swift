import ArgumentParser
import EventLog
import Foundation
import LocgateCommandSupport
import Hummingbird
import LocationGateHTTP
import LocationGateSchema
import LocationGateService
import Logging
import Metrics
import PostgresClient
import Prometheus
import ServiceLifecycle
import UnixSignals

/// `locgate serve`: the HTTP API and OFREP. Refuses to start while migrations are pending.
/// SIGTERM or SIGINT (SPEC §14): the server stops taking connections, lets the requests in
/// flight finish for up to `shutdownGrace`, ends the push streams with a retry hint, logs one
/// line (`ShutdownNotice`), and stops; what is still running after the grace is cancelled
/// (swift-service-lifecycle).
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "serve", abstract: "Serve the HTTP API and OFREP.")

    @OptionGroup var database: DatabaseOptions

    @Option(help: "Address to listen on") var host = "127.0.0.1"
    @Option(help: "Port to listen on") var port = 8080
    @Option(help: "Database connections") var poolSize = 8
    @Option(help: "Group-commit transactions in flight at once (at most the pool size)") var groupCommits = GateService.defaultGroupCommits
    @Option(help: "Per-app requests per second, all its keys together (default: $LOCGATE_RATE_LIMIT, off when unset)") var rateLimit: Double?
    @Option(help: "Per-app burst (default: one second's worth)") var rateLimitBurst: Double?
    @Option(help: "The device cache's memory budget: bytes, or with K, M or G (default: $LOCGATE_CACHE_MEMORY, else 256M)")
    var cacheMemory: String?
    @Option(help: "Push streams (OFREP event streams, /v1/changes) one app may hold open") var maxStreamsPerApp = 1000
    @Option(help: "Push streams open on this process in all") var maxStreams = 10_000
    @Option(help: "Seconds an OFREP event stream with nothing to say stays open (inactivityDelaySec)") var streamInactivity = 120
    @Option(help: "Database connections the push streams read with at once, all apps together (default: a quarter of --pool-size, at least 1)")
    var streamReads: Int?
    @Option(help: "Seconds a connection may send nothing while no answer is being written before it is closed") var idleTimeout = 30
    @Option(help: "Connections open at once (lowered to fit the file-descriptor limit)") var maxConnections = 16_000
    @Option(help: "Seconds between runs of the retention schedule (apps with a retention set)") var retentionInterval = 3600
    @Option(help: "Seconds any one database statement may run (PostgreSQL's statement_timeout; default: $LOCGATE_STATEMENT_TIMEOUT, else 15)")
    var statementTimeout: Int?
    @Flag(help: "Write one JSON line per request (method, route template, status, duration, app id) on standard error")
    var accessLog = false

    /// How long requests in flight may take to finish after SIGTERM before they are cancelled.
    static let shutdownGrace: Duration = .seconds(10)
    /// How long cancelled work may take to end after that before the process stops regardless.
    static let shutdownCancellation: Duration = .seconds(5)

    func run() async throws {
        try await CommandFailure.reporting { try await runCommand() }
    }

    private func runCommand() async throws {
        CommandLogging.bootstrap(level: database.level)
        let registry = PrometheusCollectorRegistry()
        // Every metric with its HELP text (SPEC §14), names and buckets as swift-prometheus's own.
        MetricsSystem.bootstrap(DocumentedMetricsFactory(registry: registry))
        let logger = Logger(label: "locgate")
        let environment = ProcessInfo.processInfo.environment
        let timeoutSeconds = statementTimeout ?? environment["LOCGATE_STATEMENT_TIMEOUT"].flatMap(Int.init) ?? 15
        guard timeoutSeconds >= 1 else { throw ValidationError("--statement-timeout: at least 1 second") }
        var configuration = ServerConfiguration()
        configuration.host = host
        configuration.port = port
        configuration.adminToken = environment["LOCGATE_ADMIN_TOKEN"]
        configuration.rateLimit = rateLimit ?? environment["LOCGATE_RATE_LIMIT"].flatMap(Double.init)
        configuration.rateLimitBurst = rateLimitBurst
        configuration.maxStreamsPerApp = maxStreamsPerApp
        configuration.maxStreams = maxStreams
        configuration.streamInactivity = .seconds(max(1, streamInactivity))
        configuration.streamReadConnections = streamReads.map { min(max(1, $0), max(1, poolSize)) }
        configuration.idleTimeout = .seconds(max(1, idleTimeout))
        configuration.retentionInterval = .seconds(max(1, retentionInterval))
        configuration.maxConnections = FileLimit.connections(wanted: max(1, maxConnections), logger: logger)
        configuration.accessLog = accessLog
        if let token = configuration.adminToken, !token.isEmpty, token.utf8.count < ServerConfiguration.minimumAdminTokenBytes {
            throw ValidationError(
                "LOCGATE_ADMIN_TOKEN is \(token.utf8.count) bytes: it must be at least \(ServerConfiguration.minimumAdminTokenBytes) (e.g. `openssl rand -hex 32`)")
        }
        if configuration.adminToken?.isEmpty ?? true {
            logger.warning("LOCGATE_ADMIN_TOKEN is not set: POST /v1/apps is refused; use `locgate apps create`")
        }
        if let text = environment["LOCGATE_PUBLIC_URL"], !text.isEmpty {
            guard let url = Self.publicURL(text) else {
                throw ValidationError("LOCGATE_PUBLIC_URL: \(text) is not an http or https URL such as https://locgate.example.com")
            }
            configuration.publicURL = url
        }
        let budgetText = cacheMemory ?? environment["LOCGATE_CACHE_MEMORY"] ?? "256M"
        guard let budget = Self.bytes(budgetText) else {
            throw ValidationError("--cache-memory: \(budgetText) is not a size such as 256M")
        }
        let skewText = environment["LOCGATE_MAX_CLOCK_SKEW"].flatMap { $0.isEmpty ? nil : $0 }
        var maxClockSkew = GateService.defaultMaxClockSkew
        if let skewText {
            guard let seconds = Int(skewText), seconds >= 0 else {
                throw ValidationError("LOCGATE_MAX_CLOCK_SKEW: \(skewText) is not a whole number of seconds such as 86400")
            }
            maxClockSkew = .seconds(seconds)
        }
        // Everything above is checked before a connection is opened: past this point the pools
        // close as services of the group, or here when the schema is not current.
        let pool = try database.makePool(size: poolSize, statementTimeout: .seconds(timeoutSeconds), logger: logger)
        let pending: [SchemaMigration]
        do {
            pending = try await SchemaMigrator(pool: pool, migrations: try SchemaMigrations.load(), logger: logger).pending()
        } catch {
            await pool.close()
            throw error
        }
        guard pending.isEmpty else {
            await pool.close()
            throw MigrationError.pending(pending.map(\.name))
        }
        let readPool = database.makeReadPool(size: poolSize, statementTimeout: .seconds(timeoutSeconds), logger: logger)
        let service = GateService(pool: pool, logger: logger, cacheByteBudget: budget, followsChanges: true, readPool: readPool,
            groupCommits: groupCommits, maxClockSkew: maxClockSkew)
        let app = buildApplication(service: service, configuration: configuration, registry: registry, logger: logger)
        // The pools first and the notice last: on SIGTERM a group shuts its services down last
        // first, so the line is logged as the server stops taking connections, not once it has
        // stopped, and the pools close once the server's work has ended.
        let pools: [any Service] = [pool] + (readPool.map { [$0] } ?? [])
        var group = ServiceGroupConfiguration(
            services: pools + [app, ShutdownNotice(logger: logger, grace: Self.shutdownGrace)],
            gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
        group.maximumGracefulShutdownDuration = Self.shutdownGrace
        group.maximumCancellationDuration = Self.shutdownCancellation
        try await ServiceGroup(configuration: group).run()
    }

    /// `LOCGATE_PUBLIC_URL` (SPEC §8): an http or https URL with a host and no user information.
    static func publicURL(_ text: String) -> URL? {
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased(),
              scheme == "http" || scheme == "https", let host = components.host, !host.isEmpty, components.user == nil
        else { return nil }
        return components.url
    }

    /// "1048576", "512K", "256M", "2G" as bytes.
    static func bytes(_ text: String) -> Int? {
        let units: [Character: Int] = ["K": 1 << 10, "M": 1 << 20, "G": 1 << 30]
        guard let last = text.uppercased().last else { return nil }
        if let unit = units[last] {
            return Int(text.dropLast()).flatMap { $0 >= 0 ? $0.multipliedReportingOverflow(by: unit).partialValue : nil }
        }
        return Int(text).flatMap { $0 >= 0 ? $0 : nil }
    }
}
