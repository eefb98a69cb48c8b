import Foundation
import HTTPTypes
import Hummingbird
import LocationAuthorization
import LocationGateService

/// The Experiments pages (SPEC §16 "Dashboard", §8), read through the service's experiments
/// face (`ExperimentsFace`) as the API reads them, so every figure is `GET
/// /v1/experiments/{key}/results`'s own:
///
/// - `GET /dashboard/experiments`: each experiment's key (a link to its page), state, prompt
///   kinds, and once stopped who stopped it and the winner, with a small chart of each
///   variant's exposed grant rate and its 95% interval; then every experiment as a table.
/// - `GET /dashboard/experiments/{key}`: per variant its exposed grant rate as a bar with its
///   95% interval (`ci95Exposed`) and the grant rate of those who answered (`grantRate`) as a
///   marker; the results as a table (counts, rates, intervals, uplift, p) whose CSV link
///   downloads the API's CSV byte for byte; the definition; and for a session signed in with an
///   admin key, while the experiment runs, a form that stops it with a winner.
/// - `POST /dashboard/experiments/{key}/stop` with `winner`: the stop, checked as the feature
///   editor's forms are (`DashboardFeatureEditor.swift`): a session, the server's own
///   `Origin`, an admin key (a read key's session gets 403 and a message page), the form read
///   strictly (`DashboardForm`: a field it does not have is a 422, one sent twice a 400);
///   recorded in the admin audit trail as the session's key's, as the API's stop is; then 303
///   back to the experiment's page. A winner that is no variant, or an experiment already
///   stopped, shows the page again with the service's message, nothing changed.
///
/// Nothing here evaluates a device: reading results exposes no one (SPEC §16 "Nothing the
/// dashboard shows exposes a device").
extension DashboardRoutes {
    func registerExperiments(on pages: RouteTable) {
        pages.get("/dashboard/experiments", use: experimentList)
        pages.get("/dashboard/experiments/:key", use: experimentDetail)
        pages.post("/dashboard/experiments/:key/stop", use: stopExperimentForm)
    }

    /// The experiments face of the service, the one the API's routes read.
    var experimentsFace: any ExperimentsFace { service.experiments }

    @Sendable func experimentList(_ request: Request, context: AppRequestContext) async throws -> Response {
        try await page(request, context) { identity, _ in
            let face = experimentsFace
            var listed: [(experiment: Experiment, results: ExperimentResults)] = []
            for experiment in try await face.experiments(appID: identity.appID) {
                do throws(ServiceError) {
                    let results = try await face.experimentResults(appID: identity.appID, key: experiment.key)
                    listed.append((experiment: experiment, results: results))
                } catch let error where error.code == .notFound {
                    // Deleted since the list was read: no longer shown.
                }
            }
            return Self.experimentListPage(listed)
        }
    }

    @Sendable func experimentDetail(_ request: Request, context: AppRequestContext) async throws -> Response {
        try await page(request, context) { identity, _ in
            guard let key = Self.dashboardExperimentKey(context) else { throw APIError(.notFound, "no such experiment") }
            let face = experimentsFace
            let experiment = try await face.experiment(appID: identity.appID, key: key)
            let results = try await face.experimentResults(appID: identity.appID, key: key)
            return Self.experimentDetailPage(
                experiment, results, canStop: identity.scope == .admin, stopped: request.uri.queryParameters.get("stopped") == "1")
        }
    }

    @Sendable func stopExperimentForm(_ request: Request, context: AppRequestContext) async throws -> Response {
        guard let identity = context.identity else { return Self.toSignIn() }
        try requireOwnOrigin(request)
        guard identity.scope == .admin else { return try Self.experimentsAdminOnly() }
        guard let key = Self.dashboardExperimentKey(context) else { throw APIError(.notFound, "no such experiment") }
        var request = request
        let body = String(decoding: try await request.bodyData(limit: 16 * 1024), as: UTF8.self)
        let face = experimentsFace
        // The refusal is kept and handled after the `do` (a `catch ... where` over a typed
        // error here crashed the compiler's ownership checks).
        var refusal: ServiceError?
        do throws(ServiceError) {
            let form = try DashboardForm(body, allowed: ["winner"])
            // The form always sends a winner; none (or an empty one) means the control, as the API's.
            let winner = form["winner"].flatMap { $0.isEmpty ? nil : $0 }
            _ = try await face.stopExperiment(appID: identity.appID, key: key, winner: winner, actor: .key(identity.keyID))
        } catch {
            refusal = error
        }
        if let refusal {
            guard [.invalidRequest, .validationFailed, .experimentStopped].contains(refusal.code) else { throw refusal }
            // The page again with the reason, answered with the API's status: nothing changed.
            let experiment = try await face.experiment(appID: identity.appID, key: key)
            let results = try await face.experimentResults(appID: identity.appID, key: key)
            let page = Self.experimentDetailPage(experiment, results, canStop: true, error: refusal.message)
            return try Self.render(APIError(refusal).status, .experiment, page.view(path: Self.experimentPath(key), query: []))
        }
        return Response(status: .seeOther, headers: [.location: Self.experimentPath(key) + "?stopped=1"])
    }

    // MARK: - Pages

    /// The Experiments page: a card per experiment (its chart of exposed grant rates), then
    /// the table of experiments with its CSV link.
    static func experimentListPage(_ listed: [(experiment: Experiment, results: ExperimentResults)]) -> DashboardPage {
        let entries = listed.map { item -> DashboardPage.ExperimentList.Entry in
            let experiment = item.experiment
            return DashboardPage.ExperimentList.Entry(
                key: experiment.key, href: experimentPath(experiment.key), state: experiment.state.rawValue,
                prompts: promptKinds(experiment.definition), outcome: outcome(experiment), hasOutcome: experiment.state == .stopped,
                chart: DashboardCharts.experimentVariants("\(experiment.key): exposed grant rate per variant", item.results, answered: false))
        }
        let table = DashboardTable(
            id: "experiments", title: "Experiments",
            columns: ["key", "state", "prompt", "variants", "control", "stopReason", "winner", "createdAt", "stoppedAt"],
            rows: listed.map { item -> [DashboardTable.Cell] in
                let experiment = item.experiment, definition = item.experiment.definition
                return [
                    .text(experiment.key), .text(experiment.state.rawValue), .text(promptKinds(definition)), .text(weights(definition)),
                    .text(definition.control), .text(experiment.stopReason?.rawValue ?? ""), .text(experiment.winner ?? ""),
                    .text(RFC3339.string(from: experiment.createdAt)), .text(experiment.stoppedAt.map(RFC3339.string(from:)) ?? ""),
                ]
            })
        return DashboardPage(
            template: .experiments, title: "Experiments", active: "/dashboard/experiments", filters: nil, groupChoices: [],
            sections: [.init(chart: .empty, table: table)], experimentList: DashboardPage.ExperimentList(entries: entries))
    }

    /// An experiment's page: its variants drawn and tabled as the results give them, its
    /// definition, and the stop form when `canStop` (an admin key's session) and it runs.
    /// `stopped`: it was stopped from this page just now; `error`: a refused stop's reason.
    static func experimentDetailPage(
        _ experiment: Experiment, _ results: ExperimentResults, canStop: Bool, stopped: Bool = false, error: String? = nil
    ) -> DashboardPage {
        let definition = experiment.definition
        let chart = DashboardCharts.experimentVariants(
            "Exposed grant rate per variant, with its 95% interval and the grant rate of those who answered", results, answered: true)
        let resultsTable = DashboardTable(
            id: "results", title: "Results per variant, the control first",
            columns: ["variant", "exposed", "answered", "granted", "grantRate", "ci95", "exposedGrantRate", "ci95Exposed", "uplift", "pValue"],
            rows: results.variants.map { variant -> [DashboardTable.Cell] in
                [
                    .text(variant.variant), .count(Double(variant.exposed)), .count(Double(variant.answered)), .count(Double(variant.granted)),
                    .rate(variant.grantRate), .interval(bounds(variant.ci95)), .rate(variant.exposedGrantRate),
                    .interval(bounds(variant.ci95Exposed)), .points(variant.uplift), .probability(variant.pValue),
                ]
            },
            apiCSV: ExperimentFormat.csv(results))
        let fields: [(String, String)] = [
            ("description", definition.description), ("prompt", promptKinds(definition)), ("variants", weights(definition)),
            ("control", definition.control), ("eligible", eligibility(definition.eligibility)),
            ("guard", definition.guard.map { "maxDrop \($0.maxDrop), minAnswered \($0.minAnswered)" } ?? "none"),
            ("state", experiment.state.rawValue), ("createdAt", RFC3339.string(from: experiment.createdAt)),
            ("stoppedAt", experiment.stoppedAt.map(RFC3339.string(from:)) ?? ""), ("stopReason", experiment.stopReason?.rawValue ?? ""),
            ("winner", experiment.winner ?? ""),
        ]
        let definitionTable = DashboardTable(
            id: "definition", title: "Definition", columns: ["field", "value"], rows: fields.map { field -> [DashboardTable.Cell] in [.text(field.0), .text(field.1)] })
        let running = experiment.state == .running
        let summary = DashboardPage.ExperimentSummary(
            key: experiment.key, state: experiment.state.rawValue, status: status(experiment), stopped: stopped,
            error: error ?? "", hasError: error != nil, canStop: canStop && running, readOnly: !canStop && running,
            stopAction: experimentPath(experiment.key) + "/stop",
            winnerOptions: definition.variants.map { variant in
                let isControl = variant.key == definition.control
                return DashboardPage.Option(value: variant.key, label: isControl ? "\(variant.key) (control)" : variant.key, selected: isControl)
            })
        return DashboardPage(
            template: .experiment, title: "Experiment \(experiment.key)", active: "/dashboard/experiments", filters: nil,
            groupChoices: [], sections: [.init(chart: chart, table: resultsTable), .init(chart: .empty, table: definitionTable)],
            experiment: summary)
    }

    // MARK: - Helpers

    /// 403 with a message page: a read key's session reads the experiments, an admin key's stops them.
    static func experimentsAdminOnly() throws -> Response {
        try render(.forbidden, .message, MessageView(
            layout: DashboardLayout(title: "Experiments", active: "/dashboard/experiments", signedIn: true),
            message: "Stopping an experiment needs a session signed in with an admin key.", back: true))
    }

    /// The path's experiment key, when it is one an experiment can have (as the API reads it).
    static func dashboardExperimentKey(_ context: AppRequestContext) -> String? {
        let raw = context.pathParameter("key") ?? ""
        let key = raw.contains("%") ? raw.removingPercentEncoding ?? "" : raw
        return (try? ClientText.checkKey(key, field: "key", bytes: ExperimentDefinition.keyBytes)) != nil ? key : nil
    }

    static func experimentPath(_ key: String) -> String {
        "/dashboard/experiments/" + PercentEncoding.segment(key)
    }

    /// The prompt kinds whose answers are the outcome, as given: "whenInUse, locationButton".
    static func promptKinds(_ definition: ExperimentDefinition) -> String {
        definition.prompt.kinds.map(\.rawValue).joined(separator: ", ")
    }

    /// The variants with their weights, as listed: "control 50, priming 50".
    static func weights(_ definition: ExperimentDefinition) -> String {
        definition.variants.map { "\($0.key) \($0.weight)" }.joined(separator: ", ")
    }

    /// Who may be exposed: "platforms iOS, android; minAppVersion 5.2", or "every device".
    static func eligibility(_ eligibility: ExperimentEligibility) -> String {
        var parts: [String] = []
        if let platforms = eligibility.platforms { parts.append("platforms " + platforms.map(\.rawValue).joined(separator: ", ")) }
        if let statuses = eligibility.statuses { parts.append("statuses " + statuses.map(\.rawValue).joined(separator: ", ")) }
        if let floor = eligibility.minAppVersion { parts.append("minAppVersion " + floor.text) }
        return parts.isEmpty ? "every device" : parts.joined(separator: "; ")
    }

    /// A stopped experiment's end in the API's names: "stopReason operator, winner priming".
    static func outcome(_ experiment: Experiment) -> String {
        guard experiment.state == .stopped else { return "" }
        return "stopReason \(experiment.stopReason?.rawValue ?? "unknown"), winner \(experiment.winner ?? experiment.definition.control)"
    }

    /// Where the experiment is in its life, in a sentence.
    static func status(_ experiment: Experiment) -> String {
        switch experiment.state {
        case .running:
            return "Running since \(RFC3339.string(from: experiment.createdAt)): a device is exposed at its first evaluation, "
                + "and its first answer to \(promptKinds(experiment.definition)) after that counts."
        case .stopped:
            let by = experiment.stopReason == .guard ? "the guard" : "an operator"
            let at = experiment.stoppedAt.map { " at " + RFC3339.string(from: $0) } ?? ""
            return "Stopped\(at) by \(by) (\(outcome(experiment))): every device now gets the winner."
        }
    }

    /// An interval's bounds as a table's cell takes them.
    static func bounds(_ interval: WilsonScoreInterval?) -> (low: Double, high: Double)? {
        interval.map { (low: $0.low, high: $0.high) }
    }
}

extension DashboardPage {
    /// The Experiments page's cards (`experiments.mustache`). Nothing in it is optional: a name
    /// Mustache does not find on the innermost object is looked for on the objects around it.
    struct ExperimentList {
        struct Entry {
            var key: String
            var href: String
            /// `running` or `stopped`, the API's names.
            var state: String
            /// The prompt kinds whose answers are the outcome, as given.
            var prompts: String
            /// Once stopped, "stopReason operator, winner priming"; empty while it runs.
            var outcome: String
            var hasOutcome: Bool
            /// Each variant's exposed grant rate with its 95% interval.
            var chart: SVGChart.Markup
        }

        var entries: [Entry]
    }

    /// An experiment's page above and below its tables (`experiment.mustache`): where it is in
    /// its life, a stop just made or refused, and the stop form.
    struct ExperimentSummary {
        var key: String
        var state: String
        /// `DashboardRoutes.status`: running since when, or stopped by whom with which winner.
        var status: String
        /// It was stopped from this page just now (`?stopped=1`).
        var stopped: Bool
        /// Why a stop was refused; empty when none was.
        var error: String
        var hasError: Bool
        /// The stop form is shown: an admin key's session, and the experiment runs.
        var canStop: Bool
        /// It runs, and the session's key may only read it.
        var readOnly: Bool
        var stopAction: String
        /// The variants as listed, the control selected.
        var winnerOptions: [Option]
    }
}
