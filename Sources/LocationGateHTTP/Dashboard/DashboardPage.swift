import Hummingbird
import LocationAuthorization
import LocationGateService

/// One dashboard page: its template, its filters, its charts with their tables, and on the
/// device page who the device is. `view(for:)` makes the view model its template renders; the
/// tables also answer the page's CSV links.
struct DashboardPage {
    struct Section {
        /// SVG (or a note when there is nothing to draw); `.empty` for a table alone.
        var chart: SVGChart.Markup
        var table: DashboardTable
    }

    /// What the device page says below its tables: the ids, whether the timeline was cut at
    /// 1,000 events, and the versions it can be seen as of (none without events).
    struct Device {
        var userID: String
        var deviceID: String
        var truncated: Bool
        var versions: [Int64]
    }

    var template: DashboardTemplates.Name
    var title: String
    var active: String
    /// Nil for pages without time filters.
    var filters: Filters?
    /// The `groupBy` values the page offers.
    var groupChoices: [String]
    var sections: [Section]
    var device: Device? = nil
    /// The address of the next page of older entries (the Activity page), nil when none.
    var older: String? = nil
    /// The features page's kill switches (`DashboardFeatureEditor.swift`).
    var catalog: Catalog? = nil
    /// The feature editor's form, above its preview (`DashboardFeatureEditor.swift`).
    var editor: FeatureEditor? = nil
    /// The Experiments page's experiments, each with its chart (`DashboardRoutes+Experiments.swift`).
    var experimentList: ExperimentList? = nil
    /// An experiment's page: what it is, and its stop form (`DashboardRoutes+Experiments.swift`).
    var experiment: ExperimentSummary? = nil

    var tables: [DashboardTable] { sections.map(\.table) }

    /// The view model of the page's template. Each CSV link is the page's own address with
    /// `csv=<table>`; the filter form submits to the page's own address.
    func view(for request: Request) throws -> View {
        view(path: request.uri.path, query: try QueryParameters(of: request).pairs)
    }

    /// The view model for the page at `path` with `query`: a page answered to a POST (a refused
    /// form) is shown with the address of the page it came from, so that its CSV links work.
    func view(path: String, query: [(String, String)]) -> View {
        let kept: [(String, String)] = query.filter { (item: (String, String)) -> Bool in item.0 != "csv" }
        let filtersView = filters.map { filters in
            let groupValue = filters.groupBy.map(\.rawValue).joined(separator: ",")
            let platform = filters.platform ?? ""
            return FiltersView(
                action: path,
                from: String(filters.fromText.prefix(10)),
                to: String(filters.toText.prefix(10)),
                offersGroupBy: !groupChoices.isEmpty,
                groupOptions: ([""] + groupChoices).map { choice in
                    Option(value: choice, label: choice.isEmpty ? "default" : choice, selected: choice == groupValue)
                },
                platformOptions: ([""] + Platform.allCases.map(\.rawValue)).map { choice in
                    Option(value: choice, label: choice.isEmpty ? "all" : choice, selected: choice == platform)
                })
        }
        return View(
            layout: DashboardLayout(title: title, active: active, signedIn: true),
            filters: filtersView,
            sections: sections.map { section in
                let csv = path + "?" + PercentEncoding.query(kept + [("csv", section.table.id)])
                return SectionView(chart: section.chart, table: section.table.view(csvHref: csv))
            },
            device: device, older: older, catalog: catalog, editor: editor, experimentList: experimentList, experiment: experiment)
    }

    /// The view model of a page's template (`overview.mustache`, `device.mustache`, ...).
    /// `filters` and `device` are read only by the templates of pages that have them.
    struct View {
        var layout: DashboardLayout
        var filters: FiltersView?
        var sections: [SectionView]
        var device: Device?
        /// Read only by `activity.mustache`.
        var older: String? = nil
        /// Read only by `features.mustache`.
        var catalog: Catalog? = nil
        /// Read only by `feature.mustache`.
        var editor: FeatureEditor? = nil
        /// Read only by `experiments.mustache`.
        var experimentList: ExperimentList? = nil
        /// Read only by `experiment.mustache`.
        var experiment: ExperimentSummary? = nil
    }

    /// `filters.mustache`: the dates as given, and the choices with the current one selected.
    struct FiltersView {
        var action: String
        var from: String
        var to: String
        var offersGroupBy: Bool
        var groupOptions: [Option]
        var platformOptions: [Option]
    }

    /// One `<option>` of a filter.
    struct Option {
        var value: String
        var label: String
        var selected: Bool
    }

    /// `section.mustache`: a chart and its table.
    struct SectionView {
        var chart: SVGChart.Markup
        var table: DashboardTable.View
    }
}
