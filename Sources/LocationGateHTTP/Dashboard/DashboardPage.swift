import Hummingbird
import LocationAuthorization

/// One dashboard page: its filters, its charts with their tables, and anything else.
struct DashboardPage {
    struct Section {
        /// SVG (or a note when there is nothing to draw); empty for a table alone.
        var chart: String
        var table: DashboardTable
    }

    var title: String
    var active: String
    /// Nil for pages without time filters.
    var filters: Filters?
    /// The `groupBy` values the page offers.
    var groupChoices: [String]
    var sections: [Section]
    var extra: String = ""

    var tables: [DashboardTable] { sections.map(\.table) }

    /// The page as HTML; each CSV link is the page's own address with `csv=<table>`.
    func render(_ request: Request) -> String {
        let path = request.uri.path
        let kept = request.uri.queryParameters.compactMap { item -> (String, String)? in
            let name = String(item.key), value = String(item.value)
            return name == "csv" ? nil : (name, value)
        }
        var body = ""
        if let filters {
            let groupValue = filters.groupBy.map(\.rawValue).joined(separator: ",")
            let options = ([""] + groupChoices).map { choice in
                let label = choice.isEmpty ? "default" : choice
                return #"<option value="\#(choice)"\#(choice == groupValue ? " selected" : "")>\#(label)</option>"#
            }.joined()
            let platforms = ([""] + Platform.allCases.map(\.rawValue)).map { choice in
                let label = choice.isEmpty ? "all" : choice
                return #"<option value="\#(choice)"\#(choice == (filters.platform ?? "") ? " selected" : "")>\#(label)</option>"#
            }.joined()
            body += """
                <form class="filters" method="get" action="\(HTML.escape(path))">
                <label>From<input type="date" name="from" value="\(HTML.escape(String(filters.fromText.prefix(10))))"></label>
                <label>To<input type="date" name="to" value="\(HTML.escape(String(filters.toText.prefix(10))))"></label>
                \(groupChoices.isEmpty ? "" : #"<label>Group by<select name="groupBy">\#(options)</select></label>"#)
                <label>Platform<select name="platform">\(platforms)</select></label>
                <button type="submit">Apply</button></form>
                """
        }
        for section in sections {
            let csv = path + "?" + HTML.query(kept + [("csv", section.table.id)])
            body += "<section>" + section.chart + section.table.html(csvHref: csv) + "</section>"
        }
        body += extra
        return HTML.page(title: title, active: active, signedIn: true, body: body)
    }
}
