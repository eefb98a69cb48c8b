import EventLog
import Foundation
import Hummingbird
import HTTPTypes
import LocationAuthorization
import LocationGateJSON
import LocationGateService
import Logging

/// The dashboard (SPEC §8): pages rendered on the server over the same service queries as the
/// API, for people who read grant rates and audit devices. Each handler builds a typed view
/// model and a Mustache template renders it (`DashboardTemplates`), escaping every value.
/// Sign-in with an app key of `read` or `admin` scope starts a server-side session
/// (`DashboardSessions`); its random id, never the key, is kept in an HttpOnly, SameSite=Strict
/// cookie, `Secure` when the public URL is https (`DashboardSite`). Sign-in and sign-out are
/// accepted from the server's own origin only. Every other address under `/dashboard` is behind
/// the session (303 to the sign-in form without one) and the per-app rate limiter, and every
/// page shows the session's app only.
/// Filters (`from`, `to`, `groupBy`) are query parameters, so a view can be shared; every table
/// has a CSV link (`?csv=<table>` on the page's own address).
struct DashboardRoutes {
    /// Sign-in (the key's check), the feature editor's reads and writes.
    let catalog: CatalogCapability
    let analytics: AnalyticsCapability
    /// The device page's timeline and state.
    let audit: AuditCapability
    /// The Experiments pages, read as the API reads them.
    let experiments: any ExperimentsFace
    /// The Activity page.
    let adminAudit: AdminAuditLog
    let sessions: DashboardSessions
    let site: DashboardSite
    /// The per-app limiter of the API's groups; nil when limits are off.
    let limiter: RateLimiter?
    /// Failed authentications per peer, shared with the API (`AuthenticationMiddleware`).
    let failures: RateLimiter
    static let cookieName = "locgate_session"

    init(
        catalog: CatalogCapability, analytics: AnalyticsCapability, audit: AuditCapability, experiments: any ExperimentsFace,
        adminAudit: AdminAuditLog, sessions: DashboardSessions, configuration: ServerConfiguration, limiter: RateLimiter?,
        failures: RateLimiter
    ) {
        (self.catalog, self.analytics, self.audit, self.experiments, self.adminAudit, self.sessions) =
            (catalog, analytics, audit, experiments, adminAudit, sessions)
        self.failures = failures
        self.site = DashboardSite(publicURL: configuration.publicURL)
        self.limiter = limiter
        // Read and parse the templates now, as the server starts, not on the first page.
        _ = DashboardTemplates.bundled
    }

    /// The sign-in form and its two POSTs, mounted at `/dashboard` outside the session.
    var signInRoutes: RouteCollection<AppRequestContext> {
        let routes = RouteCollection(context: AppRequestContext.self)
        routes.get("/signin", use: signInForm)
        routes.post("/signin", use: signIn)
        routes.post("/signout", use: signOut)
        return routes
    }

    /// The pages, mounted on the `/dashboard` area behind `pageMiddleware`: each handler is
    /// given the session's key (a read or admin key, which the session middleware admitted).
    var pages: RouteCollection<AppRequestContext> {
        let routes = RouteCollection(context: AppRequestContext.self)
        let signedIn = routes.scoped(.read)
        signedIn.get("/", use: overview)
        signedIn.get("/prompts", use: prompts)
        signedIn.get("/escalation", use: escalation)
        signedIn.get("/location-button", use: locationButton)
        signedIn.get("/settings", use: settings)
        signedIn.get("/features", use: features)
        addFeatureEditor(to: signedIn)
        addExperiments(to: signedIn)
        signedIn.get("/activity", use: activity)
        signedIn.get("/device", use: findDevice)
        signedIn.get("/users/:user/devices/:device", use: device)
        return routes
    }

    /// What the pages' area runs before them: the session (303 to the sign-in form without
    /// one), then the per-app rate limiter. Any other address under `/dashboard` is a 404
    /// behind them.
    var pageMiddleware: [any MiddlewareProtocol<Request, Response, AppRequestContext>] {
        var middleware: [any MiddlewareProtocol<Request, Response, AppRequestContext>] = [DashboardSessionMiddleware(sessions: sessions)]
        if let limiter { middleware.append(RateLimitMiddleware(limiter: limiter)) }
        return middleware
    }

    // MARK: - Sign-in

    @Sendable func signInForm(_ request: Request, context: AppRequestContext) async throws -> Response {
        try Self.render(.ok, .signIn, SignInView(layout: DashboardLayout(title: "Sign in", active: "", signedIn: false), error: nil))
    }

    /// SPEC §8: a `read` or `admin` key starts a session (303 to the overview with its cookie);
    /// an unknown, revoked or ingest key gets 401 and the form again, a key past its sign-ins
    /// (`DashboardSessions.signInLimit` in any minute; SPEC §14) 429 with Retry-After and the
    /// form. A session the browser already held is ended. Neither the key nor the session id
    /// is logged.
    @Sendable func signIn(_ request: Request, context: AppRequestContext) async throws -> Response {
        try requireOwnOrigin(request)
        var request = request
        let body = String(decoding: try await request.bodyData(limit: 16 * 1024), as: UTF8.self)
        // The form has one field (SPEC §14: an unknown or repeated one is refused on the form).
        let key: String
        do throws(ServiceError) {
            key = try DashboardForm(body, allowed: ["key"])["key"] ?? ""
        } catch {
            return try Self.signInRefused(error.message, status: APIError(error).status)
        }
        guard let identity = try await AuthenticationMiddleware.identity(
            forKey: key, keys: catalog.authentication, failures: failures, context: context)
        else {
            return try Self.signInRefused("That key is not a valid app key.")
        }
        try charge(identity)
        guard identity.scope == .read || identity.scope == .admin else {
            return try Self.signInRefused("An ingest key cannot read the dashboard: use a read or admin key.")
        }
        let session: String
        switch try await sessions.start(for: identity) {
        case .started(let id):
            session = id
        case .keyRevoked:
            return try Self.signInRefused("That key is not a valid app key.")
        case .limited(let retryAfter):
            // SPEC §14 "Guard rails": 429 on the form, nothing started or recorded.
            var response = try Self.render(
                .tooManyRequests, .signIn,
                SignInView(
                    layout: DashboardLayout(title: "Sign in", active: "", signedIn: false),
                    error: "This key signed in too often: try again in \(retryAfter) seconds."))
            response.headers[.retryAfter] = String(retryAfter)
            return response
        }
        if let previous = request.cookies[Self.cookieName]?.value, !previous.isEmpty {
            try await sessions.end(session: previous)
        }
        context.logger.info("dashboard sign-in", metadata: ["app": "\(identity.appID.uuidString.lowercased())", "keyId": "\(identity.keyID.uuidString.lowercased())"])
        var response = Response(status: .seeOther, headers: [.location: "/dashboard"])
        response.setCookie(sessionCookie(session))
        return response
    }

    /// SPEC §8: ends the session on the server (every server refuses its id from then on) and
    /// clears the cookie; 303 to the sign-in form, with or without a session.
    @Sendable func signOut(_ request: Request, context: AppRequestContext) async throws -> Response {
        try requireOwnOrigin(request)
        if let id = request.cookies[Self.cookieName]?.value, !id.isEmpty {
            try await sessions.end(session: id)
        }
        var response = Self.toSignIn()
        response.setCookie(sessionCookie("", maxAge: 0))
        return response
    }

    /// 401 (or `status`) with the form again.
    static func signInRefused(_ message: String, status: HTTPResponse.Status = .unauthorized) throws -> Response {
        try render(status, .signIn, SignInView(layout: DashboardLayout(title: "Sign in", active: "", signedIn: false), error: message))
    }

    /// 303 to the sign-in form.
    static func toSignIn() -> Response {
        Response(status: .seeOther, headers: [.location: "/dashboard/signin"])
    }

    /// The session cookie: HttpOnly, SameSite=Strict, the dashboard's path only, and `Secure`
    /// by configuration alone (never by a request header).
    func sessionCookie(_ value: String, maxAge: Int? = nil) -> Cookie {
        Cookie(name: Self.cookieName, value: value, maxAge: maxAge, path: "/dashboard", secure: site.secure, httpOnly: true, sameSite: .strict)
    }

    /// SPEC §8: sign-in and sign-out need the server's own `Origin`; a missing or foreign one
    /// is 403 `forbidden` (a page of another site cannot sign a browser in or out).
    func requireOwnOrigin(_ request: Request) throws {
        // HTTP/1's `Host` header is the request's authority.
        guard site.accepts(origin: request.headers[.origin], host: request.head.authority) else {
            throw APIError(.forbidden, "sign-in and sign-out are accepted only from the dashboard's own origin")
        }
    }

    /// Charges a dashboard request to its app's rate limit, as the API's requests are.
    func charge(_ identity: APIIdentity) throws {
        try limiter?.charge(identity.appID)
    }

    /// Runs a page for the session's key, with the filters of its query.
    func page(
        _ request: Request, _ identity: APIIdentity, _ body: (APIIdentity, Filters) async throws -> DashboardPage
    ) async throws -> Response {
        let query = try QueryParameters(of: request)
        let filters: Filters
        do {
            filters = try Filters(query)
        } catch let error as ServiceError {
            // As the analytics API answers them: a malformed filter 400, a range whose `from`
            // is after its `to` (or outside SPEC §1's) 422.
            return try Self.render(APIError(error).status, .message, MessageView(
                layout: DashboardLayout(title: "Bad filters", active: "", signedIn: true), message: error.message, back: false))
        }
        let page = try await body(identity, filters)
        if let table = query["csv"] {
            guard let found = page.tables.first(where: { $0.id == table }) else {
                throw APIError(.notFound, "no table \(table.prefix(64)) on this page")
            }
            return Response(
                status: .ok,
                headers: [.contentType: "text/csv; charset=utf-8", .contentDisposition: #"attachment; filename="\#(found.id).csv""#],
                body: ResponseBody(byteBuffer: ByteBuffer(string: found.csv)))
        }
        return try Self.render(.ok, page.template, page.view(path: request.uri.path, query: query.pairs))
    }

    /// A page: `template` rendering `view`, answered as `html`. A template that cannot be
    /// rendered is a defect of the build (500).
    static func render(_ status: HTTPResponse.Status, _ template: DashboardTemplates.Name, _ view: Any) throws -> Response {
        let text = try DashboardTemplates.bundled.get().render(view, template)
        return html(status, text)
    }

    static func html(_ status: HTTPResponse.Status, _ text: String) -> Response {
        Response(status: status, headers: [
            .contentType: "text/html; charset=utf-8",
            // Nothing outside the server, no script, no framing.
            .contentSecurityPolicy: "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; form-action 'self'; frame-ancestors 'none'",
            .xContentTypeOptions: "nosniff",
        ], body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
    }

    // MARK: - Pages

    /// SPEC §8: each page draws its figures first (`DashboardCharts`), then has them as a
    /// table with its CSV link.
    @Sendable func overview(_ request: Request, context: AppRequestContext, caller: APIIdentity) async throws -> Response {
        try await page(request, caller) { identity, filters in
            let period: AnalyticsQuery.Dimension = filters.groupBy.contains(.week) ? .week : .day
            // One catch-up of the rollups for the page's three charts.
            let figures = try await analytics.analytics([
                query(.statuses, identity, filters, groupBy: []),
                query(.prompts, identity, filters, groupBy: []),
                query(.prompts, identity, filters, groupBy: [period]),
            ])
            let (statuses, prompts, trend) = (figures[0], figures[1], figures[2])
            let statusTable = DashboardTable.analytics(id: "statuses", title: "Devices by status", rows: statuses)
            let promptTable = DashboardTable.analytics(id: "prompts", title: "Grant and Always rates per prompt", rows: prompts)
            let trendTable = DashboardTable.analytics(id: "trend", title: "Trend by \(period.rawValue)", rows: trend)
            return DashboardPage(template: .overview, title: "Overview", active: "/dashboard", filters: filters, groupChoices: ["day", "week"], sections: [
                .init(chart: DashboardCharts.statuses(statuses), table: statusTable),
                .init(chart: DashboardCharts.promptRates(prompts), table: promptTable),
                .init(chart: DashboardCharts.promptTrend(trend, period: period), table: trendTable),
            ])
        }
    }

    @Sendable func prompts(_ request: Request, context: AppRequestContext, caller: APIIdentity) async throws -> Response {
        try await page(request, caller) { identity, filters in
            let groupBy = filters.groupBy.isEmpty ? [AnalyticsQuery.Dimension.platform] : filters.groupBy
            let rows = try await figures(.prompts, identity, filters, groupBy: groupBy)
            let table = DashboardTable.analytics(id: "prompts", title: "Prompts by \(groupBy.map(\.rawValue).joined(separator: ", "))", rows: rows)
            return DashboardPage(template: .prompts, title: "Prompts", active: "/dashboard/prompts", filters: filters,
                                 groupChoices: ["platform", "osMajor", "appVersion", "day", "week"], sections: [
                .init(chart: DashboardCharts.promptChoices(rows, groupBy: groupBy), table: table),
            ])
        }
    }

    @Sendable func escalation(_ request: Request, context: AppRequestContext, caller: APIIdentity) async throws -> Response {
        try await page(request, caller) { identity, filters in
            let rows = try await figures(.escalations, identity, filters, groupBy: filters.groupBy)
            let table = DashboardTable.analytics(id: "escalations", title: "Escalation", rows: rows)
            let chart = DashboardCharts.funnel("Escalation funnel, every group together", rows, steps: DashboardCharts.escalationSteps)
            return DashboardPage(template: .escalation, title: "Escalation funnel", active: "/dashboard/escalation", filters: filters,
                                 groupChoices: ["platform", "osMajor", "appVersion", "day", "week"], sections: [
                .init(chart: chart, table: table),
            ])
        }
    }

    /// The location button's funnel (SPEC §12, `GET /v1/analytics/location-button`): sessions,
    /// results, the consent dialogs and their answers, direct grants, and the refusals.
    @Sendable func locationButton(_ request: Request, context: AppRequestContext, caller: APIIdentity) async throws -> Response {
        try await page(request, caller) { identity, filters in
            let rows = try await figures(.locationButton, identity, filters, groupBy: filters.groupBy)
            let table = DashboardTable.analytics(id: "location-button", title: "Location button", rows: rows)
            let chart = DashboardCharts.funnel("Location button funnel, every group together", rows, steps: DashboardCharts.locationButtonSteps)
            return DashboardPage(template: .locationButton, title: "Location button (Android 17)", active: "/dashboard/location-button",
                                 filters: filters, groupChoices: ["platform", "osMajor", "appVersion", "day", "week"], sections: [
                .init(chart: chart, table: table),
            ])
        }
    }

    @Sendable func settings(_ request: Request, context: AppRequestContext, caller: APIIdentity) async throws -> Response {
        try await page(request, caller) { identity, filters in
            let groupBy = filters.groupBy.isEmpty ? [AnalyticsQuery.Dimension.day] : filters.groupBy
            let rows = try await figures(.settings, identity, filters, groupBy: groupBy)
            let table = DashboardTable.analytics(id: "settings", title: "Settings changes", rows: rows)
            return DashboardPage(template: .settings, title: "Settings changes", active: "/dashboard/settings", filters: filters,
                                 groupChoices: ["day", "week", "platform", "osMajor", "appVersion"], sections: [
                .init(chart: DashboardCharts.settingsChanges(rows, groupBy: groupBy), table: table),
            ])
        }
    }

    @Sendable func features(_ request: Request, context: AppRequestContext, caller: APIIdentity) async throws -> Response {
        try await page(request, caller) { identity, filters in
            let coverage = try await analytics.featureCoverage(appID: identity.appID, cancellation: context.clientGone())
            let table = DashboardTable(
                id: "features", title: "Features now",
                columns: ["feature", "requires", "devices", "enabled", "top reasons (disabled)", "top actions (disabled)", "switch", "minAppVersion"],
                rows: coverage.map { item in
                    [.text(item.feature.key), .text(item.feature.requires.rawValue), .count(Double(item.devices)), .count(Double(item.enabled)),
                     .text(item.reasons.prefix(3).map { "\($0.0.rawValue) \($0.1)" }.joined(separator: ", ")),
                     .text(item.actions.prefix(3).map { "\($0.0.rawValue) \($0.1)" }.joined(separator: ", ")),
                     .text(item.feature.disabled ? "disabled" : "on"), .text(item.feature.minAppVersion?.text ?? "")]
                })
            return DashboardPage(template: .features, title: "Features", active: "/dashboard/features", filters: nil, groupChoices: [], sections: [
                .init(chart: DashboardCharts.featureDecisions(coverage), table: table),
            ], catalog: DashboardPage.Catalog(coverage.map(\.feature), canEdit: identity.scope == .admin))
        }
    }

    @Sendable func findDevice(_ request: Request, context: AppRequestContext, caller: APIIdentity) async throws -> Response {
        let query = try QueryParameters(of: request)
        let user = query["user"] ?? "", device = query["device"] ?? ""
        guard EventSubmission.isValidIdentifier(user), EventSubmission.isValidIdentifier(device) else {
            return try Self.render(.badRequest, .message, MessageView(
                layout: DashboardLayout(title: "Find a device", active: "", signedIn: true),
                message: "User and device ids are 1 to 128 characters of A-Z a-z 0-9 . _ : @ -", back: true))
        }
        return Response(status: .seeOther, headers: [.location: "/dashboard/users/\(PercentEncoding.segment(user))/devices/\(PercentEncoding.segment(device))"])
    }

    @Sendable func device(_ request: Request, context: AppRequestContext, caller: APIIdentity) async throws -> Response {
        try await page(request, caller) { identity, _ in
            let user = context.parameters.get("user") ?? "", device = context.parameters.get("device") ?? ""
            guard EventSubmission.isValidIdentifier(user), EventSubmission.isValidIdentifier(device) else {
                throw APIError(.notFound, "no such device")
            }
            let key = StreamKey(appID: identity.appID, userID: user, deviceID: device)
            let timeline = try await audit.timeline(key)
            let table = Self.timelineTable(timeline.steps)
            var sections = [DashboardPage.Section(chart: DashboardCharts.deviceStatus(timeline.steps), table: table)]
            let versionText = try QueryParameters(of: request)["version"]
            let version = versionText.flatMap(Int64.init) ?? Int64(timeline.steps.count)
            if version > 0 {
                let view = try await audit.state(key, asOf: nil, version: version)
                let state = view.state
                let fields: [(String, String)] = [
                    ("status", state.status.rawValue), ("authorization", state.authorization.rawValue),
                    ("provisional", "\(state.provisional)"), ("temporary", "\(state.temporary)"),
                    ("alwaysPromptUsed", "\(state.alwaysPromptUsed)"), ("pendingPrompt", state.pendingPrompt?.rawValue ?? "none"),
                    ("accuracy", state.effectiveAccuracy.rawValue), ("locationServicesEnabled", "\(state.locationServicesEnabled)"),
                    ("restricted", "\(state.restricted)"), ("inUse", "\(state.inUse)"),
                    ("inferredAllowWhileUsing", "\(state.inferredAllowWhileUsing)"),
                    ("platform", state.context.platform?.rawValue ?? "unknown"), ("osVersion", state.context.osVersion?.description ?? "unknown"),
                    ("appVersion", state.context.appVersion ?? "unknown"),
                ] + view.decisions.map { ("feature \($0.feature)", $0.enabled ? "enabled" : "\($0.reason.rawValue), \($0.action.rawValue)") }
                sections.append(.init(chart: .empty, table: DashboardTable(
                    id: "state", title: "State as of version \(view.version)", columns: ["field", "value"],
                    rows: fields.map { [.text($0.0), .text($0.1)] })))
                sections.append(.init(chart: .empty, table: Self.sessionsTable(state, version: view.version)))
                sections.append(.init(chart: .empty, table: Self.diagnosticsTable(timeline.steps.prefix { $0.entry.version <= view.version }.map(\.entry))))
            }
            let versions: [Int64] = timeline.steps.isEmpty ? [] : Array(1...Int64(timeline.steps.count))
            return DashboardPage(
                template: .device, title: "Device", active: "", filters: nil, groupChoices: [], sections: sections,
                device: DashboardPage.Device(userID: user, deviceID: device, truncated: timeline.truncated, versions: versions))
        }
    }

    /// SPEC §8: the device's timeline, an event a row: its version and time, the event in
    /// words with its type under it, its data as named fields (never raw JSON), its effects
    /// (inferred answers marked, O2), the status before and after it, and each feature's
    /// decision after it as named fields.
    static func timelineTable(_ steps: [DeviceTimeline.Step]) -> DashboardTable {
        let rows = steps.map { step -> [DashboardTable.Cell] in
            let entry = step.entry
            let effects = entry.effects.map(Self.describe).joined(separator: "; ")
            let inferred = entry.effects.contains {
                switch $0 {
                case .answerInferred, .answerCorrected: true
                default: false
                }
            }
            let effectsCell: DashboardTable.Cell = inferred ? .marked(effects) : .text(effects)
            let decisions = step.decisions.map { decision -> (name: String, text: String) in
                (name: decision.feature, text: decision.enabled ? "on" : "off (\(decision.reason.rawValue))")
            }
            return [
                .count(Double(entry.version)), .text(entry.occurredAt),
                .described(EventInWords.sentence(type: entry.type, data: entry.data), code: entry.type),
                .fields(EventInWords.fields(entry.data)), effectsCell,
                .text("\(entry.before.status.rawValue) → \(entry.after.status.rawValue)"), .fields(decisions),
            ]
        }
        return DashboardTable(id: "timeline", title: "Timeline",
                              columns: ["version", "occurredAt", "event", "data", "effects", "status", "decisions"], rows: rows)
    }

    /// SPEC §11 on the device page: the sessions held, the background activity and the
    /// monitor's limit.
    static func sessionsTable(_ state: DeviceState, version: Int64) -> DashboardTable {
        let sessions = state.sessionState
        var rows: [[DashboardTable.Cell]] = sessions.sessions.keys.sorted().compactMap { key in
            guard let session = sessions.sessions[key] else { return nil }
            return [.text(key), .text(session.requirement.rawValue), .text(session.fullAccuracyPurposeKey ?? "none"),
                    .text(session.active ? "active" : (session.resumable ? "resumable" : "waiting for the foreground"))]
        }
        rows.append([.text("background activity"), .text("—"), .text("—"),
                     .text(sessions.backgroundActivity ? "active" : (sessions.backgroundActivityResumable ? "resumable" : "none"))])
        rows.append([.text("monitor"), .text("—"), .text("—"), .text(sessions.monitorLimited ? "condition limit exceeded" : "within limits")])
        return DashboardTable(id: "sessions", title: "Service sessions as of version \(version)",
                              columns: ["session", "requirement", "fullAccuracyPurposeKey", "state"], rows: rows)
    }

    /// The last diagnostic of each source among the entries shown.
    static func diagnosticsTable(_ entries: [HistoryPage.Entry]) -> DashboardTable {
        var last: [String: HistoryPage.Entry] = [:]
        for entry in entries where entry.type == EventType.diagnosticObserved.rawValue {
            if let source = entry.data["source"]?.string { last[source] = entry }
        }
        let rows: [[DashboardTable.Cell]] = DiagnosticSource.allCases.compactMap { source in
            guard let entry = last[source.rawValue], case .object = entry.data else { return nil }
            let data = entry.data
            var flags: [String] = []
            if case .array(let items)? = data["flags"] {
                for case .string(let flag) in items { flags.append(flag) }
            }
            var session = ""
            if case .string(let key)? = data["session"] { session = key }
            return [.text(source.rawValue), .text(session), .count(Double(entry.version)), .text(entry.occurredAt),
                    .text(flags.isEmpty ? "none" : flags.joined(separator: ", "))]
        }
        return DashboardTable(id: "diagnostics", title: "Last diagnostic of each source",
                              columns: ["source", "session", "version", "occurredAt", "flags"], rows: rows)
    }

    // MARK: - Helpers

    func figures(_ kind: AnalyticsQuery.Kind, _ identity: APIIdentity, _ filters: Filters, groupBy: [AnalyticsQuery.Dimension]) async throws -> [AnalyticsQuery.Row] {
        try await analytics.analytics(query(kind, identity, filters, groupBy: groupBy))
    }

    /// The app's query of `kind` under the page's filters (devices by status are counted now,
    /// whatever the dates).
    func query(_ kind: AnalyticsQuery.Kind, _ identity: APIIdentity, _ filters: Filters, groupBy: [AnalyticsQuery.Dimension]) -> AnalyticsQuery {
        AnalyticsQuery(kind: kind, appID: identity.appID, groupBy: groupBy, from: kind == .statuses ? nil : filters.from,
                       to: kind == .statuses ? nil : filters.to, platform: filters.platform)
    }

    static func describe(_ effect: Effect) -> String {
        switch effect {
        case .promptShown(let prompt): "prompt \(prompt.rawValue) shown"
        case .statusChanged(let from, let to): "status \(from.rawValue) → \(to.rawValue)"
        case .accuracyChanged(let from, let to): "accuracy \(from.rawValue) → \(to.rawValue)"
        case .noEffect(let reason): "no effect (\(reason.rawValue))"
        case .failed(let reason, let keys): "failed (\(reason.rawValue): \(keys.joined(separator: ", ")))"
        case .eventDelivered(let delivered): delivered ? "event delivered" : "event not delivered"
        case .reconciled(let from, let to): "reconciled \(from.rawValue) → \(to.rawValue)"
        case .answerInferred(let prompt, let choice): "inferred: \(prompt.rawValue) answered \(choice.rawValue)"
        case .answerCorrected(let prompt, let from, let to): "inferred answer corrected: \(prompt.rawValue) \(from.rawValue) → \(to.rawValue)"
        case .sessionChanged(let session, let active): "session \(session) \(active ? "active" : "inactive or ended")"
        case .reset(let reason): "permission state reset (\(reason.rawValue))"
        }
    }
}

/// The filters of a page, from its query parameters.
struct Filters {
    var from: Date?
    var to: Date?
    var groupBy: [AnalyticsQuery.Dimension]
    var fromText: String
    var toText: String
    /// One platform's figures (SPEC §12), or every platform's.
    var platform: String?

    init(_ parameters: QueryParameters) throws {
        fromText = parameters["from"] ?? ""
        toText = parameters["to"] ?? ""
        // As the analytics API reads them: `from` after `to` is refused, naming `from`.
        (from, to) = try AnalyticsQuery.parseRange(from: fromText.isEmpty ? nil : fromText, to: toText.isEmpty ? nil : toText)
        let group = parameters["groupBy"] ?? ""
        groupBy = try AnalyticsQuery.parseGroupBy(group.isEmpty ? nil : group)
        platform = try AnalyticsQuery.parsePlatform(parameters["platform"])
    }
}
