import Foundation
import Hummingbird
import LocationGateService
import Logging
import NIOCore
import Prometheus
import ServiceLifecycle

/// How the server runs (SPEC §5 "Running"). Every field has a default.
public struct ServerConfiguration: Sendable {
    /// 127.0.0.1 by default: put a proxy in front to serve other hosts.
    public var host: String = "127.0.0.1"
    public var port: Int = 8080
    /// `LOCGATE_ADMIN_TOKEN`: creates apps. Without it no app can be created over HTTP.
    /// `locgate serve` refuses one shorter than `minimumAdminTokenBytes`.
    public var adminToken: String?
    public static let minimumAdminTokenBytes = 32
    /// Per-app requests per second (all of the app's keys together); nil turns limits off
    /// (the default).
    public var rateLimit: Double?
    /// Tokens an app may spend at once; defaults to one second's worth.
    public var rateLimitBurst: Double?
    /// Failed authentications per second one peer address may make, and at once
    /// (`AuthenticationMiddleware`).
    public var failedAuthenticationRate = 20.0
    public var failedAuthenticationBurst = 100.0
    /// Push streams (OFREP event streams and `/v1/changes`) one app may hold open on this
    /// process, and all apps together.
    public var maxStreamsPerApp = 1000
    public var maxStreams = 10_000
    /// OFREP's `inactivityDelaySec`: an event stream with nothing to say closes after it.
    public var streamInactivity: Duration = .seconds(120)
    /// Database connections the push streams read with at once (their catch-up pages, the
    /// feed's head, OFREP evaluations), all apps' streams together, taken in turn by app
    /// (`StreamReads`). Nil: a quarter of the pool, at least one.
    public var streamReadConnections: Int?
    /// `LOCGATE_PUBLIC_URL`: the address people reach the server at when it is not the
    /// server's own (a TLS-terminating proxy in front). The dashboard accepts its origin on
    /// sign-in and sign-out besides the request's own, and an https one makes the dashboard's
    /// cookie `Secure` (SPEC §8). Nil by default: plain http on the server's address.
    public var publicURL: URL?
    /// A connection that sends nothing for this long while no answer is being written (an
    /// idle keep-alive, or a request whose head or body trickles in) is closed. Push streams
    /// are answers being written and are not idle.
    public var idleTimeout: Duration = .seconds(30)
    /// Connections open at once; beyond it the server stops accepting until one closes (the
    /// kernel's backlog holds the rest). Above `maxStreams`, so that push streams never take
    /// every connection, and below the process's file-descriptor limit (`locgate serve`
    /// lowers it to fit).
    public var maxConnections = 16_000
    /// How often this server runs the retention schedule (`locgate serve --retention-interval`).
    public var retentionInterval: Duration = .seconds(3600)
    /// `locgate serve --access-log`: one JSON line per request on standard error
    /// (`AccessLogMiddleware`). Off by default.
    public var accessLog = false

    public init() {}
}

/// Assembles the application: routes, middleware, and the cache follower as a service. Tests
/// call the same function.
public func buildApplication(
    service: GateService, configuration: ServerConfiguration, registry: PrometheusCollectorRegistry? = nil,
    logger: Logger
) -> some ApplicationProtocol {
    let follower = CacheFollower(service: service, logger: logger)
    let router = buildRouter(service: service, follower: follower, configuration: configuration, registry: registry)
    return Application(
        router: router,
        server: .http1(configuration: .init(idleTimeout: .init(configuration.idleTimeout))),
        configuration: .init(
            address: .hostname(configuration.host, port: configuration.port), serverName: "locgate",
            availableConnectionsDelegate: .maximum(configuration.maxConnections, logger: logger)),
        services: [follower, ChangeTicker(hub: service.push.hub)] + service.backgroundServices(logger: logger, retentionInterval: configuration.retentionInterval),
        logger: logger)
}

/// The router alone, for tests that need no server.
public func buildRouter(
    service: GateService, follower: CacheFollower?, configuration: ServerConfiguration,
    registry: PrometheusCollectorRegistry?
) -> IndexedRouter {
    let indexed = IndexedRouter(router: Router(context: AppRequestContext.self))
    let router = indexed.router
    // First, so that its line has the status every other middleware settled.
    if configuration.accessLog { router.add(middleware: AccessLogMiddleware()) }
    router.add(middleware: ErrorBodyMiddleware())
    router.add(middleware: RequestMetricsMiddleware())
    // Before every route and every key check: a query parameter given twice (SPEC §14).
    router.add(middleware: QueryParametersMiddleware())
    let routes = RouteTable(router: indexed)
    let streamReads = StreamReads(
        limit: configuration.streamReadConnections ?? StreamReads.defaultLimit(poolSize: service.push.databaseConnections))
    let streams = StreamRegistry(
        maxPerApp: configuration.maxStreamsPerApp, maxTotal: configuration.maxStreams, inactivity: configuration.streamInactivity,
        reads: streamReads, revocations: service.catalog.authentication)
    // Keys and per-app limits on the API's groups; health and metrics are outside them. The
    // dashboard signs in with its own sessions and is charged to the same per-app limiter.
    // Failed authentications, counted per peer for the API and the dashboard's sign-in alike.
    let failures = AuthenticationMiddleware.failureLimiter(configuration)
    var keyed: [any MiddlewareProtocol<Request, Response, AppRequestContext>] = [
        AuthenticationMiddleware(keys: service.catalog.authentication, adminToken: configuration.adminToken, failures: failures)
    ]
    var limiter: RateLimiter?
    if let rate = configuration.rateLimit, rate > 0 {
        limiter = RateLimiter(requestsPerSecond: rate, burst: configuration.rateLimitBurst ?? rate)
    }
    if let limiter { keyed.append(RateLimitMiddleware(limiter: limiter)) }
    // The areas: each a group with its middleware, the API's parts mounted on it as route
    // collections (paths relative to the area), each with its scope groups inside and the one
    // face of the service it calls.
    HealthRoutes(health: service.health, follower: follower, registry: registry, streams: streams).register(on: routes)
    let v1 = routes.area("/v1", middleware: keyed)
    v1.addRoutes(CatalogRoutes(catalog: service.catalog).collection)
    v1.addRoutes(ExperimentRoutes(experiments: service.experiments).collection)
    v1.addRoutes(EventRoutes(ingest: service.events).collection)
    v1.addRoutes(GateRoutes(gates: service.gates).collection)
    v1.addRoutes(HistoryRoutes(history: service.audit).collection)
    v1.addRoutes(AnalyticsRoutes(analytics: service.analytics).collection)
    v1.addRoutes(ChangeFeedRoutes(feed: service.push, streams: streams).collection)
    v1.addRoutes(ErasureRoutes(service: service.erasure).collection)
    v1.addRoutes(RetentionRoutes(service: service.retention).collection)
    v1.addRoutes(ExportRoutes(service: service.export).collection)
    v1.addRoutes(AdminRoutes(catalog: service.catalog, adminAudit: service.adminAudit).collection)
    let ofrep = routes.area("/ofrep/v1", catchAll: true, middleware: [OFREPErrorMiddleware()] + keyed)
    let flags = OFREPFlags(features: service.gates, experiments: service.experiments)
    ofrep.addRoutes(OFREPRoutes(flags: flags, streams: streams).collection)
    ofrep.addRoutes(OFREPStreamRoutes(flags: flags, hints: service.push, streams: streams).collection)
    // The dashboard: sign-in outside the session, the pages in an area behind it.
    let dashboard = DashboardRoutes(
        catalog: service.catalog, analytics: service.analytics, audit: service.audit, experiments: service.experiments,
        adminAudit: service.adminAudit, sessions: service.dashboardSessions, configuration: configuration, limiter: limiter,
        failures: failures)
    routes.addRoutes(dashboard.signInRoutes, atPath: "/dashboard")
    routes.area("/dashboard", catchAll: true, middleware: dashboard.pageMiddleware).addRoutes(dashboard.pages)
    // The trivial JSON route the benchmarks compare gates against.
    routes.get("/hello") { _, _ -> [String: String] in
        ["hello": "world"]
    }
    routes.registerMethodNotAllowed()
    return indexed
}
