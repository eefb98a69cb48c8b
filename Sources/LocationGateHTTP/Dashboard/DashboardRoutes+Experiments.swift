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
    func addExperiments(to pages: ScopedRoutes<RouteCollection<AppRequestContext>>) {
        pages.get("/experiments", use: experimentList)
        pages.get("/experiments/:key", use: experimentDetail)
        pages.post("/experiments/:key/stop", use: stopExperimentForm)
    }

    @Sendable func experimentList(_ request: Request, context: AppRequestContext, caller: APIIdentity) async throws -> Response {
        try await page(request, caller) { (identity: APIIdentity, _: Filters) async throws -> DashboardPage in
            let face: any ExperimentsFace = experiments
            var listed: [(experiment: Experiment, results: ExperimentResults)] = []
            let experiments: [Experiment] = try await face.experiments(appID: identity.appID)
            for experiment in experiments {
                // The refusal is kept and handled after the `do` (a `catch ... where` over a
                // typed error crashed the compiler's ownership checks).
                var refusal: ServiceError? = nil
                do throws(ServiceError) {
                    let results: ExperimentResults = try await face.experimentResults(appID: identity.appID, key: experiment.key)
                    listed.append((experiment: experiment, results: results))
                } catch {
                    refusal = error
                }
                // Deleted since the list was read (notFound): no longer shown.
                if let refusal, refusal.code != ServiceError.Code.notFound { throw refusal }
            }
            let listPage: DashboardPage = Self.experimentListPage(listed)
            return listPage
        }
    }

    @Sendable func experimentDetail(_ request: Request, context: AppRequestContext, caller: APIIdentity) async throws -> Response {
        try await page(request, caller) { (identity: APIIdentity, _: Filters) async throws -> DashboardPage in
            guard let key: String = Self.dashboardExperimentKey(context) else { throw APIError(.notFound, "no such experiment") }
            let face: any ExperimentsFace = experiments
            let experiment: Experiment = try await face.experiment(appID: identity.appID, key: key)
            let results: ExperimentResults = try await face.experimentResults(appID: identity.appID, key: key)
            let canStop: Bool = identity.scope == KeyScope.admin
            let stoppedFlag: String? = try QueryParameters(of: request)["stopped"]
            let stopped: Bool = stoppedFlag == "1"
            let detailPage: DashboardPage = Self.experimentDetailPage(experiment, results, canStop: canStop, stopped: stopped)
            return detailPage
        }
    }

    @Sendable func stopExperimentForm(_ request: Request, context: AppRequestContext, caller identity: APIIdentity) async throws -> Response {
        try requireOwnOrigin(request)
        guard identity.scope == KeyScope.admin else { return try Self.experimentsAdminOnly() }
        guard let key: String = Self.dashboardExperimentKey(context) else { throw APIError(.notFound, "no such experiment") }
        var request = request
        let limit: Int = 16 * 1024
        let data: Data = try await request.bodyData(limit: limit)
        let body: String = String(decoding: data, as: UTF8.self)
        let face: any ExperimentsFace = experiments
        // The refusal is kept and handled after the `do` (a `catch ... where` over a typed
        // error here crashed the compiler's ownership checks).
        var refusal: ServiceError? = nil
        do throws(ServiceError) {
            let form: DashboardForm = try DashboardForm(body, allowed: ["winner"])
            // The form always sends a winner; none (or an empty one) means the control, as the API's.
            let sent: String? = form["winner"]
            var winner: String? = nil
            if let sent, !sent.isEmpty { winner = sent }
            _ = try await face.stopExperiment(appID: identity.appID, key: key, winner: winner, actor: AuditActor.key(identity.keyID))
        } catch {
            refusal = error
        }
        if let refusal {
            let shownAgain: [ServiceError.Code] = [.invalidRequest, .validationFailed, .experimentStopped]
            guard shownAgain.contains(refusal.code) else { throw refusal }
            // The page again with the reason, answered with the API's status: nothing changed.
            let experiment: Experiment = try await face.experiment(appID: identity.appID, key: key)
            let results: ExperimentResults = try await face.experimentResults(appID: identity.appID, key: key)
            let page: DashboardPage = Self.experimentDetailPage(experiment, results, canStop: true, error: refusal.message)
            let status: HTTPResponse.Status = APIError(refusal).status
            let noQuery: [(String, String)] = []
            let view: DashboardPage.View = page.view(path: Self.experimentPath(key), query: noQuery)
            return try Self.render(status, DashboardTemplates.Name.experiment, view)
        }
        let location: String = Self.experimentPath(key) + "?stopped=1"
        let headers: HTTPFields = [.location: location]
        return Response(status: .seeOther, headers: headers)
    }

    // MARK: - Pages

    /// The Experiments page: a card per experiment (its chart of exposed grant rates), then
    /// the table of experiments with its CSV link.
    static func experimentListPage(_ listed: [(experiment: Experiment, results: ExperimentResults)]) -> DashboardPage {
        let entries: [DashboardPage.ExperimentList.Entry] = listed.map {
            (item: (experiment: Experiment, results: ExperimentResults)) -> DashboardPage.ExperimentList.Entry in
            experimentListEntry(item.experiment, item.results)
        }
        let columns: [String] = ["key", "state", "prompt", "variants", "control", "stopReason", "winner", "createdAt", "stoppedAt"]
        let rows: [[DashboardTable.Cell]] = listed.map {
            (item: (experiment: Experiment, results: ExperimentResults)) -> [DashboardTable.Cell] in
            experimentListRow(item.experiment)
        }
        let table: DashboardTable = DashboardTable(id: "experiments", title: "Experiments", columns: columns, rows: rows)
        let sections: [DashboardPage.Section] = [DashboardPage.Section(chart: SVGChart.Markup.empty, table: table)]
        let list: DashboardPage.ExperimentList = DashboardPage.ExperimentList(entries: entries)
        return DashboardPage(
            template: .experiments, title: "Experiments", active: "/dashboard/experiments", filters: nil, groupChoices: [],
            sections: sections, experimentList: list)
    }

    /// One card of the Experiments page.
    static func experimentListEntry(_ experiment: Experiment, _ results: ExperimentResults) -> DashboardPage.ExperimentList.Entry {
        let key: String = experiment.key
        let href: String = experimentPath(key)
        let state: String = experiment.state.rawValue
        let prompts: String = promptKinds(experiment.definition)
        let ending: String = outcome(experiment)
        let hasOutcome: Bool = experiment.state == ExperimentState.stopped
        let chartTitle: String = "\(key): exposed grant rate per variant"
        let chart: SVGChart.Markup = DashboardCharts.experimentVariants(chartTitle, results, answered: false)
        return DashboardPage.ExperimentList.Entry(
            key: key, href: href, state: state, prompts: prompts, outcome: ending, hasOutcome: hasOutcome, chart: chart)
    }

    /// One row of the Experiments page's table.
    static func experimentListRow(_ experiment: Experiment) -> [DashboardTable.Cell] {
        let definition: ExperimentDefinition = experiment.definition
        let key: String = experiment.key
        let state: String = experiment.state.rawValue
        let prompts: String = promptKinds(definition)
        let variants: String = weights(definition)
        let control: String = definition.control
        let stopReason: String = experiment.stopReason?.rawValue ?? ""
        let winner: String = experiment.winner ?? ""
        let createdAt: String = RFC3339.string(from: experiment.createdAt)
        var stoppedAt: String = ""
        if let date = experiment.stoppedAt { stoppedAt = RFC3339.string(from: date) }
        var cells: [DashboardTable.Cell] = []
        cells.append(DashboardTable.Cell.text(key))
        cells.append(DashboardTable.Cell.text(state))
        cells.append(DashboardTable.Cell.text(prompts))
        cells.append(DashboardTable.Cell.text(variants))
        cells.append(DashboardTable.Cell.text(control))
        cells.append(DashboardTable.Cell.text(stopReason))
        cells.append(DashboardTable.Cell.text(winner))
        cells.append(DashboardTable.Cell.text(createdAt))
        cells.append(DashboardTable.Cell.text(stoppedAt))
        return cells
    }

    /// One variant's row of an experiment's results table, the API's numbers.
    static func experimentResultRow(_ variant: VariantResult) -> [DashboardTable.Cell] {
        let exposed: Double = Double(variant.exposed)
        let answered: Double = Double(variant.answered)
        let granted: Double = Double(variant.granted)
        let ci95: (low: Double, high: Double)? = bounds(variant.ci95)
        let ci95Exposed: (low: Double, high: Double)? = bounds(variant.ci95Exposed)
        var cells: [DashboardTable.Cell] = []
        cells.append(DashboardTable.Cell.text(variant.variant))
        cells.append(DashboardTable.Cell.count(exposed))
        cells.append(DashboardTable.Cell.count(answered))
        cells.append(DashboardTable.Cell.count(granted))
        cells.append(DashboardTable.Cell.rate(variant.grantRate))
        cells.append(DashboardTable.Cell.interval(ci95))
        cells.append(DashboardTable.Cell.rate(variant.exposedGrantRate))
        cells.append(DashboardTable.Cell.interval(ci95Exposed))
        cells.append(DashboardTable.Cell.points(variant.uplift))
        cells.append(DashboardTable.Cell.probability(variant.pValue))
        return cells
    }

    /// An experiment's definition as (field, value) rows.
    static func experimentFields(_ experiment: Experiment) -> [(String, String)] {
        let definition: ExperimentDefinition = experiment.definition
        var guardText: String = "none"
        if let rule = definition.guard {
            let maxDrop: Double = rule.maxDrop
            let minAnswered: Int = rule.minAnswered
            guardText = "maxDrop \(maxDrop), minAnswered \(minAnswered)"
        }
        var stoppedAt: String = ""
        if let date = experiment.stoppedAt { stoppedAt = RFC3339.string(from: date) }
        let stopReason: String = experiment.stopReason?.rawValue ?? ""
        let winner: String = experiment.winner ?? ""
        var fields: [(String, String)] = []
        fields.append(("description", definition.description))
        fields.append(("prompt", promptKinds(definition)))
        fields.append(("variants", weights(definition)))
        fields.append(("control", definition.control))
        fields.append(("eligible", eligibility(definition.eligibility)))
        fields.append(("guard", guardText))
        fields.append(("state", experiment.state.rawValue))
        fields.append(("createdAt", RFC3339.string(from: experiment.createdAt)))
        fields.append(("stoppedAt", stoppedAt))
        fields.append(("stopReason", stopReason))
        fields.append(("winner", winner))
        return fields
    }

    /// An experiment's page: its variants drawn and tabled as the results give them, its
    /// definition, and the stop form when `canStop` (an admin key's session) and it runs.
    /// `stopped`: it was stopped from this page just now; `error`: a refused stop's reason.
    static func experimentDetailPage(
        _ experiment: Experiment, _ results: ExperimentResults, canStop: Bool, stopped: Bool = false, error: String? = nil
    ) -> DashboardPage {
        let definition: ExperimentDefinition = experiment.definition
        let chartTitle: String = "Exposed grant rate per variant, with its 95% interval and the grant rate of those who answered"
        let chart: SVGChart.Markup = DashboardCharts.experimentVariants(chartTitle, results, answered: true)
        let resultColumns: [String] = [
            "variant", "exposed", "answered", "granted", "grantRate", "ci95", "exposedGrantRate", "ci95Exposed", "uplift", "pValue",
        ]
        let resultRows: [[DashboardTable.Cell]] = results.variants.map {
            (variant: VariantResult) -> [DashboardTable.Cell] in
            experimentResultRow(variant)
        }
        let apiCSV: String = ExperimentFormat.csv(results)
        let resultsTable: DashboardTable = DashboardTable(
            id: "results", title: "Results per variant, the control first", columns: resultColumns, rows: resultRows, apiCSV: apiCSV)
        let fields: [(String, String)] = experimentFields(experiment)
        let definitionRows: [[DashboardTable.Cell]] = fields.map { (field: (String, String)) -> [DashboardTable.Cell] in
            let cells: [DashboardTable.Cell] = [DashboardTable.Cell.text(field.0), DashboardTable.Cell.text(field.1)]
            return cells
        }
        let definitionColumns: [String] = ["field", "value"]
        let definitionTable: DashboardTable = DashboardTable(
            id: "definition", title: "Definition", columns: definitionColumns, rows: definitionRows)
        let running: Bool = experiment.state == ExperimentState.running
        let control: String = definition.control
        let winnerOptions: [DashboardPage.Option] = definition.variants.map {
            (variant: ExperimentVariant) -> DashboardPage.Option in
            let isControl: Bool = variant.key == control
            var label: String = variant.key
            if isControl { label = "\(variant.key) (control)" }
            return DashboardPage.Option(value: variant.key, label: label, selected: isControl)
        }
        let statusText: String = status(experiment)
        let errorText: String = error ?? ""
        let hasError: Bool = error != nil
        let showsForm: Bool = canStop && running
        let readOnly: Bool = !canStop && running
        let stopAction: String = experimentPath(experiment.key) + "/stop"
        let summary: DashboardPage.ExperimentSummary = DashboardPage.ExperimentSummary(
            key: experiment.key, state: experiment.state.rawValue, status: statusText, stopped: stopped,
            error: errorText, hasError: hasError, canStop: showsForm, readOnly: readOnly,
            stopAction: stopAction, winnerOptions: winnerOptions)
        let pageTitle: String = "Experiment \(experiment.key)"
        let sections: [DashboardPage.Section] = [
            DashboardPage.Section(chart: chart, table: resultsTable),
            DashboardPage.Section(chart: SVGChart.Markup.empty, table: definitionTable),
        ]
        return DashboardPage(
            template: .experiment, title: pageTitle, active: "/dashboard/experiments", filters: nil,
            groupChoices: [], sections: sections, experiment: summary)
    }

    // MARK: - Helpers

    /// 403 with a message page: a read key's session reads the experiments, an admin key's stops them.
    static func experimentsAdminOnly() throws -> Response {
        let layout: DashboardLayout = DashboardLayout(title: "Experiments", active: "/dashboard/experiments", signedIn: true)
        let message: MessageView = MessageView(
            layout: layout, message: "Stopping an experiment needs a session signed in with an admin key.", back: true)
        return try render(.forbidden, .message, message)
    }

    /// The path's experiment key, when it is one an experiment can have (as the API reads it).
    static func dashboardExperimentKey(_ context: AppRequestContext) -> String? {
        let raw: String = context.parameters.get("key") ?? ""
        let encoded: Bool = raw.contains("%")
        var key: String = raw
        if encoded {
            let decoded: String? = raw.removingPercentEncoding
            key = decoded ?? ""
        }
        let checked: Void? = try? ClientText.checkKey(key, field: "key", bytes: ExperimentDefinition.keyBytes)
        guard checked != nil else { return nil }
        return key
    }

    static func experimentPath(_ key: String) -> String {
        let segment: String = PercentEncoding.segment(key)
        return "/dashboard/experiments/" + segment
    }

    /// The prompt kinds whose answers are the outcome, as given: "whenInUse, locationButton".
    static func promptKinds(_ definition: ExperimentDefinition) -> String {
        let names: [String] = definition.prompt.kinds.map { (kind: Prompt) -> String in kind.rawValue }
        return names.joined(separator: ", ")
    }

    /// The variants with their weights, as listed: "control 50, priming 50".
    static func weights(_ definition: ExperimentDefinition) -> String {
        let parts: [String] = definition.variants.map { (variant: ExperimentVariant) -> String in
            "\(variant.key) \(variant.weight)"
        }
        return parts.joined(separator: ", ")
    }

    /// Who may be exposed: "platforms iOS, android; minAppVersion 5.2", or "every device".
    static func eligibility(_ eligibility: ExperimentEligibility) -> String {
        var parts: [String] = []
        if let platforms = eligibility.platforms {
            let names: [String] = platforms.map { (platform: Platform) -> String in platform.rawValue }
            let joined: String = names.joined(separator: ", ")
            parts.append("platforms " + joined)
        }
        if let statuses = eligibility.statuses {
            let names: [String] = statuses.map { (status: AuthorizationStatus) -> String in status.rawValue }
            let joined: String = names.joined(separator: ", ")
            parts.append("statuses " + joined)
        }
        if let floor = eligibility.minAppVersion {
            let text: String = floor.text
            parts.append("minAppVersion " + text)
        }
        if parts.isEmpty { return "every device" }
        return parts.joined(separator: "; ")
    }

    /// A stopped experiment's end in the API's names: "stopReason operator, winner priming".
    static func outcome(_ experiment: Experiment) -> String {
        guard experiment.state == ExperimentState.stopped else { return "" }
        let reason: String = experiment.stopReason?.rawValue ?? "unknown"
        let winner: String = experiment.winner ?? experiment.definition.control
        return "stopReason \(reason), winner \(winner)"
    }

    /// Where the experiment is in its life, in a sentence.
    static func status(_ experiment: Experiment) -> String {
        switch experiment.state {
        case .running:
            let since: String = RFC3339.string(from: experiment.createdAt)
            let kinds: String = promptKinds(experiment.definition)
            let first: String = "Running since \(since): a device is exposed at its first evaluation, "
            let second: String = "and its first answer to \(kinds) after that counts."
            return first + second
        case .stopped:
            let byGuard: Bool = experiment.stopReason == ExperimentStopReason.guard
            let by: String = byGuard ? "the guard" : "an operator"
            var at: String = ""
            if let date = experiment.stoppedAt {
                let stamp: String = RFC3339.string(from: date)
                at = " at " + stamp
            }
            let ending: String = outcome(experiment)
            return "Stopped\(at) by \(by) (\(ending)): every device now gets the winner."
        }
    }

    /// An interval's bounds as a table's cell takes them.
    static func bounds(_ interval: WilsonScoreInterval?) -> (low: Double, high: Double)? {
        guard let interval else { return nil }
        return (low: interval.low, high: interval.high)
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
