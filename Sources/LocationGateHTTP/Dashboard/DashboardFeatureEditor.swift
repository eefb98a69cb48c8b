import Foundation
import HTTPTypes
import Hummingbird
import LocationAuthorization
import LocationGateService

/// The feature page's changes (SPEC §15): edit a feature (its requirements, services, accuracy,
/// kill switch and app version floor), see what saving it would change for the app's devices
/// now, then save; and a kill switch one click away per feature on the features page.
///
/// - `GET /dashboard/features/{key}`: the editor, filled with the feature as the catalog holds
///   it (a key the catalog lacks: a new feature). With `preview=1` and the form's fields in the
///   query (the form's Preview button), the same form with what was entered and, under it, the
///   preview (`CatalogCapability.previewFeature`) as a table with its CSV link: reading only, so a GET.
/// - `POST /dashboard/features/{key}` (the form's Save button): puts the feature, then 303 back
///   to the editor with `saved=1`; a refused definition shows the form again with the reason.
/// - `POST /dashboard/features/{key}/switch` with `disabled=true` or `false`: the kill switch,
///   the rest of the feature as it is; 303 to the features page.
/// - `GET /dashboard/feature?key=` (the features page's "new feature" form): 303 to the editor.
///
/// All of them need a session signed in with an admin key (a read key's session gets 403 and a
/// message page); the two POSTs also need the server's own `Origin`, as sign-in and sign-out do
/// (with the session cookie's SameSite=Strict, a page of another site cannot post them). A
/// change is recorded as the session's key's, as the same change through the API would be.
///
/// The forms are read as strictly as the API reads a body (SPEC §14, `DashboardForm`): a field
/// the form does not have (422) or one sent twice (400) is refused on the page, nothing saved
/// or previewed. So each field is sent once: each service's box has a name of its own
/// (`services.visits`), which also keeps the Preview's query free of repeated parameters.
extension DashboardRoutes {
    func addFeatureEditor(to pages: ScopedRoutes<RouteCollection<AppRequestContext>>) {
        pages.get("/feature", use: findFeature)
        pages.get("/features/:key", use: featureEditor)
        pages.post("/features/:key", use: saveFeature)
        pages.post("/features/:key/switch", use: switchFeature)
    }

    @Sendable func findFeature(_ request: Request, context: AppRequestContext, caller identity: APIIdentity) async throws -> Response {
        guard identity.scope == .admin else { return try Self.adminOnly() }
        let key = try QueryParameters(of: request)["key"] ?? ""
        guard Self.isFeatureKey(key) else {
            return try Self.render(.badRequest, .message, MessageView(
                layout: DashboardLayout(title: "Features", active: "/dashboard/features", signedIn: true),
                message: "A feature key is 1 to 64 characters of A-Z a-z 0-9 . _ -", back: true))
        }
        return Response(status: .seeOther, headers: [.location: Self.editorPath(key)])
    }

    @Sendable func featureEditor(_ request: Request, context: AppRequestContext, caller identity: APIIdentity) async throws -> Response {
        guard identity.scope == .admin else { return try Self.adminOnly() }
        guard let key = Self.featureKey(context) else { throw APIError(.notFound, "no such feature") }
        let query = try QueryParameters(of: request)
        let saved = query["saved"] == "1"
        // The form's Preview (a GET with preview=1): its fields are in the query, form-encoded
        // as a body is (`+` for a space, which the query's own decoding does not undo), and
        // read as strictly as the Save's body.
        let submitted: FeatureForm?
        if query["preview"] == "1" {
            do throws(ServiceError) {
                submitted = try FeatureForm(
                    form: DashboardForm(request.uri.query ?? "", allowed: FeatureForm.fieldNames.union(FeatureForm.pageFields)))
            } catch {
                return try await refusedEditor(request, identity: identity, key: key, status: APIError(error).status, message: error.message)
            }
        } else {
            submitted = nil
        }
        return try await page(request, identity) { identity, _ in
            let current = try await catalog.feature(appID: identity.appID, key: key)
            guard let form = submitted else {
                let form = current.map(FeatureForm.init(feature:)) ?? FeatureForm()
                return Self.editorPage(key: key, form: form, isNew: current == nil, saved: saved)
            }
            let feature: Feature
            do throws(ServiceError) {
                feature = try form.feature(key: key)
            } catch {
                return Self.editorPage(key: key, form: form, isNew: current == nil, error: error.message)
            }
            let preview = try await catalog.previewFeature(appID: identity.appID, feature: feature, cancellation: context.clientGone())
            return Self.editorPage(key: key, form: form, isNew: current == nil, preview: preview)
        }
    }

    @Sendable func saveFeature(_ request: Request, context: AppRequestContext, caller identity: APIIdentity) async throws -> Response {
        try requireOwnOrigin(request)
        guard identity.scope == .admin else { return try Self.adminOnly() }
        guard let key = Self.featureKey(context) else { throw APIError(.notFound, "no such feature") }
        var request = request
        let body = String(decoding: try await request.bodyData(limit: 64 * 1024), as: UTF8.self)
        let form: FeatureForm
        do throws(ServiceError) {
            // The Save button sends the form's hidden `preview` field too.
            form = try FeatureForm(form: DashboardForm(body, allowed: FeatureForm.fieldNames.union(["preview"])))
        } catch {
            return try await refusedEditor(request, identity: identity, key: key, status: APIError(error).status, message: error.message)
        }
        func refused(_ message: String) async throws -> Response {
            let current = try await catalog.feature(appID: identity.appID, key: key)
            let page = Self.editorPage(key: key, form: form, isNew: current == nil, error: message)
            return try Self.render(.unprocessableContent, .feature, try page.view(for: request))
        }
        let feature: Feature
        do {
            feature = try form.feature(key: key)
        } catch {
            return try await refused(error.message)
        }
        do throws(ServiceError) {
            _ = try await catalog.putFeature(appID: identity.appID, feature: feature, actor: .key(identity.keyID))
        } catch {
            guard error.code == .validationFailed else { throw error }
            return try await refused(error.message)
        }
        return Response(status: .seeOther, headers: [.location: Self.editorPath(key) + "?saved=1"])
    }

    @Sendable func switchFeature(_ request: Request, context: AppRequestContext, caller identity: APIIdentity) async throws -> Response {
        try requireOwnOrigin(request)
        guard identity.scope == .admin else { return try Self.adminOnly() }
        guard let key = Self.featureKey(context) else { throw APIError(.notFound, "no such feature") }
        var request = request
        let body = String(decoding: try await request.bodyData(limit: 16 * 1024), as: UTF8.self)
        let form: DashboardForm
        do throws(ServiceError) {
            form = try DashboardForm(body, allowed: ["disabled"])
        } catch {
            return try Self.render(APIError(error).status, .message, MessageView(
                layout: DashboardLayout(title: "Features", active: "/dashboard/features", signedIn: true),
                message: error.message, back: true))
        }
        let disabled: Bool
        switch form["disabled"] ?? "" {
        case "true": disabled = true
        case "false": disabled = false
        default: throw APIError(.invalidRequest, "disabled: must be true or false")
        }
        // Only `disabled` changes, in one statement under the feature's lock: a concurrent change
        // of another field (a PATCH, the CLI) is kept (SPEC §14 "Partial changes").
        guard try await catalog.setFeatureDisabled(disabled, appID: identity.appID, key: key, actor: .key(identity.keyID)) != nil else {
            throw APIError(.notFound, "no such feature")
        }
        return Response(status: .seeOther, headers: [.location: "/dashboard/features"])
    }

    // MARK: - Helpers

    /// The editor again, showing the feature as the catalog holds it (or an empty form) and
    /// why a submitted form was refused, answered with `status`: nothing was saved.
    func refusedEditor(
        _ request: Request, identity: APIIdentity, key: String, status: HTTPResponse.Status, message: String
    ) async throws -> Response {
        let current = try await catalog.feature(appID: identity.appID, key: key)
        let form = current.map(FeatureForm.init(feature:)) ?? FeatureForm()
        let page = Self.editorPage(key: key, form: form, isNew: current == nil, error: message)
        return try Self.render(status, .feature, try page.view(for: request))
    }

    /// 403 with a message page: a read key's session sees the catalog, an admin key's changes it.
    static func adminOnly() throws -> Response {
        try render(.forbidden, .message, MessageView(
            layout: DashboardLayout(title: "Features", active: "/dashboard/features", signedIn: true),
            message: "Changing features needs a session signed in with an admin key.", back: true))
    }

    static func isFeatureKey(_ key: String) -> Bool {
        (try? ClientText.checkKey(key, field: "key", bytes: 1...64)) != nil
    }

    /// The path's feature key, when it is one a feature can have.
    static func featureKey(_ context: AppRequestContext) -> String? {
        let raw = context.parameters.get("key") ?? ""
        let key = raw.contains("%") ? raw.removingPercentEncoding ?? "" : raw
        return isFeatureKey(key) ? key : nil
    }

    static func editorPath(_ key: String) -> String {
        "/dashboard/features/" + PercentEncoding.segment(key)
    }

    /// The editor, with the preview's table (and chart) under it when there is one.
    static func editorPage(
        key: String, form: FeatureForm, isNew: Bool, saved: Bool = false, error: String? = nil, preview: FeaturePreview? = nil
    ) -> DashboardPage {
        var sections: [DashboardPage.Section] = []
        if let preview {
            let table = DashboardTable(
                id: "preview", title: "What saving would change, of \(preview.devices) devices now",
                columns: ["from", "to", "devices", "byPlatform", "sample"],
                rows: preview.changes.map { change in
                    [.text(describe(change.from)), .text(describe(change.to)), .count(Double(change.devices)),
                     .text(change.byPlatform.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")),
                     .text(change.sample.map { "\($0.userId)/\($0.deviceId)" }.joined(separator: ", "))]
                })
            let bars = preview.changes.map { SVGChart.BarGroup(label: "\(describe($0.from)) → \(describe($0.to))", values: [Double($0.devices)]) }
            let chart = SVGChart.bars("Devices whose decision saving would change", series: ["devices"], groups: bars, format: SVGChart.count)
            sections.append(.init(chart: bars.isEmpty ? .empty : chart, table: table))
        }
        return DashboardPage(
            template: .feature, title: isNew ? "New feature" : "Feature", active: "/dashboard/features", filters: nil,
            groupChoices: [], sections: sections,
            editor: DashboardPage.FeatureEditor(key: key, form: form, isNew: isNew, saved: saved, error: error, preview: preview))
    }

    /// A preview's outcome as a cell: "on", or "off (reason)".
    static func describe(_ outcome: FeaturePreview.Outcome) -> String {
        outcome.enabled ? "on" : "off (\(outcome.reason))"
    }
}

/// The editor's fields as the form sends them (`feature.mustache`), read by the API's own
/// parser (`FeatureCatalog.parseDefinition`), so the dashboard refuses what `PUT` refuses.
struct FeatureForm: Sendable {
    var requires = Tier.whenInUse.rawValue
    var services: [String] = []
    var accuracy = AccuracyNeed.any.rawValue
    var delivery = FeatureDelivery.locationManager.rawValue
    /// "" for the default (true when `requires` is `always`), else "true" or "false".
    var background = ""
    var description = ""
    var minAppVersion = ""
    var disabled = false

    init() {}

    init(feature: Feature) {
        requires = feature.requires.rawValue
        services = feature.services.map(\.rawValue)
        accuracy = feature.accuracy.rawValue
        delivery = feature.delivery.rawValue
        background = feature.background == (feature.requires == .always) ? "" : String(feature.background)
        description = feature.description ?? ""
        minAppVersion = feature.minAppVersion?.text ?? ""
        disabled = feature.disabled
    }

    /// The form's own fields (`feature.mustache`), each sent at most once: a checkbox only when
    /// checked, each service's box under its own name (`serviceField`).
    static let fieldNames: Set<String> = Set(
        ["requires", "accuracy", "delivery", "background", "description", "minAppVersion", "disabled"]
            + LocationService.allCases.map(FeatureForm.serviceField))

    /// Fields of the editor's address that are not the feature's: the Preview's `preview=1`,
    /// the `saved=1` after a Save, a table's `csv`.
    static let pageFields: Set<String> = ["preview", "saved", "csv"]

    /// The name of a service's checkbox: `services.visits`.
    static func serviceField(_ service: LocationService) -> String {
        "services." + service.rawValue
    }

    /// The fields of a form the page sent (`DashboardForm` refused unknown and repeated
    /// ones); the page's own fields are not the feature's. A checked box sends `true`; any
    /// other value is refused (422), not read as unchecked.
    init(form: DashboardForm) throws(ServiceError) {
        for (name, value) in form.fields {
            switch name {
            case "requires": requires = value
            case "accuracy": accuracy = value
            case "delivery": delivery = value
            case "background": background = value
            case "description": description = value
            case "minAppVersion": minAppVersion = value
            case "disabled":
                try Self.requireChecked(name, value)
                disabled = true
            default:
                guard let service = LocationService.allCases.first(where: { Self.serviceField($0) == name }) else { continue }
                try Self.requireChecked(name, value)
                services.append(service.rawValue)
            }
        }
    }

    private static func requireChecked(_ name: String, _ value: String) throws(ServiceError) {
        guard value == "true" else {
            throw ServiceError(.validationFailed, "\(name): a checked box sends true, not \(value.prefix(32))")
        }
    }

    /// The feature the form defines, or the API's refusal (`validationFailed` naming the field).
    func feature(key: String) throws(ServiceError) -> Feature {
        struct Definition: Encodable {
            var requires: String
            var services: [String]
            var accuracy: String
            var delivery: String
            var background: Bool?
            var description: String?
            var disabled: Bool
            var minAppVersion: String?
        }
        let background: Bool?
        switch self.background {
        case "": background = nil
        case "true": background = true
        case "false": background = false
        default: throw ServiceError(.validationFailed, "background: must be true or false")
        }
        // A form's empty field is no value; a floor typed with spaces around it is meant without.
        let floor = minAppVersion.trimmingCharacters(in: .whitespaces)
        let body: Data
        do {
            body = try JSONEncoder().encode(Definition(
                requires: requires, services: services, accuracy: accuracy, delivery: delivery, background: background,
                description: description.isEmpty ? nil : description, disabled: disabled, minAppVersion: floor.isEmpty ? nil : floor))
        } catch {
            throw ServiceError(.invalidRequest, "the form could not be read")
        }
        return try FeatureCatalog.parseDefinition(key: key, body: body)
    }
}

extension DashboardPage {
    /// The feature editor (`feature.mustache`): the form's fields as the page shows them.
    struct FeatureEditor {
        /// One checkbox of the services.
        struct Choice {
            var name: String
            var checked: Bool
        }

        var key: String
        /// The form's address: GET with `preview=1` previews, POST saves.
        var action: String
        var isNew: Bool
        var saved: Bool
        var error: String?
        var requiresOptions: [Option]
        var accuracyOptions: [Option]
        var deliveryOptions: [Option]
        var backgroundOptions: [Option]
        var serviceChoices: [Choice]
        var descriptionText: String
        var minAppVersion: String
        var disabled: Bool
        /// A preview was asked for and answered (its table follows the form).
        var previewed: Bool
        /// ... and no device would change.
        var unchanged: Bool

        init(key: String, form: FeatureForm, isNew: Bool, saved: Bool, error: String?, preview: FeaturePreview?) {
            func options(_ values: [String], _ chosen: String, labels: [String: String] = [:]) -> [Option] {
                values.map { Option(value: $0, label: labels[$0] ?? $0, selected: $0 == chosen) }
            }
            self.key = key
            action = DashboardRoutes.editorPath(key)
            self.isNew = isNew
            self.saved = saved
            self.error = error
            requiresOptions = options(Tier.allCases.map(\.rawValue), form.requires)
            accuracyOptions = options(AccuracyNeed.allCases.map(\.rawValue), form.accuracy)
            deliveryOptions = options(FeatureDelivery.allCases.map(\.rawValue), form.delivery)
            backgroundOptions = options(
                ["", "true", "false"], form.background, labels: ["": "default (yes for always)", "true": "yes", "false": "no"])
            serviceChoices = LocationService.allCases.map { Choice(name: $0.rawValue, checked: form.services.contains($0.rawValue)) }
            descriptionText = form.description
            minAppVersion = form.minAppVersion
            disabled = form.disabled
            previewed = preview != nil
            unchanged = preview?.changes.isEmpty ?? false
        }
    }

    /// The features page's kill switches (`features.mustache`): one form per feature, and for
    /// an admin key's session a link to its editor.
    struct Catalog {
        struct Entry {
            var key: String
            var href: String
            var switchAction: String
            /// "on", or "disabled" while the kill switch is on.
            var state: String
            /// The value the button posts: the other state.
            var switchTo: String
            var switchLabel: String
        }

        var canEdit: Bool
        var entries: [Entry]

        init(_ features: [Feature], canEdit: Bool) {
            self.canEdit = canEdit
            entries = features.map { feature in
                let path = DashboardRoutes.editorPath(feature.key)
                return Entry(
                    key: feature.key, href: path, switchAction: path + "/switch", state: feature.disabled ? "disabled" : "on",
                    switchTo: feature.disabled ? "false" : "true", switchLabel: feature.disabled ? "Turn on" : "Turn off")
            }
        }
    }
}
