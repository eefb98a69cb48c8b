import Foundation
import LocationGateService

/// A table as a dashboard page shows it and as its CSV link downloads it. Numbers keep the
/// analytics API's exact value (in `data-value` and in the CSV); the page shows rates as
/// percentages.
struct DashboardTable {
    struct Cell {
        var text: String
        /// The exact number, as the API gives it; nil for text.
        var value: String?
        /// Markup already escaped (a link); shown instead of `text` on the page.
        var html: String?

        static func text(_ text: String) -> Cell { Cell(text: text) }
        static func count(_ value: Double) -> Cell { Cell(text: String(Int64(value)), value: String(Int64(value))) }
        static func rate(_ value: Double?) -> Cell {
            guard let value else { return Cell(text: "–", value: "") }
            return Cell(text: String(format: "%.1f%%", value * 100), value: "\(value)")
        }
        static func link(_ text: String, _ href: String) -> Cell {
            Cell(text: text, html: #"<a href="\#(HTML.escape(href))">\#(HTML.escape(text))</a>"#)
        }
    }

    var id: String
    var title: String
    var columns: [String]
    var rows: [[Cell]]

    /// The table with a CSV link to `csvHref`.
    func html(csvHref: String) -> String {
        var html = #"<h2>\#(HTML.escape(title))</h2><p class="csv"><a href="\#(HTML.escape(csvHref))">CSV</a></p>"#
        html += #"<div class="scroll"><table id="\#(id)"><thead><tr>"#
        html += columns.map { "<th>\(HTML.escape($0))</th>" }.joined() + "</tr></thead><tbody>"
        for row in rows {
            html += "<tr>" + row.map { cell in
                if let markup = cell.html { return "<td>\(markup)</td>" }
                if let value = cell.value {
                    return #"<td class="n" data-value="\#(HTML.escape(value))">\#(HTML.escape(cell.text))</td>"#
                }
                return "<td>\(HTML.escape(cell.text))</td>"
            }.joined() + "</tr>"
        }
        if rows.isEmpty { html += #"<tr><td colspan="\#(max(1, columns.count))" class="muted">No data for these filters.</td></tr>"# }
        return html + "</tbody></table></div>"
    }

    /// RFC 4180 CSV: a header row, then the rows with exact numbers (`CSVCell` neutralises text).
    var csv: String {
        var lines = [columns.map(CSVCell.text).joined(separator: ",")]
        for row in rows {
            lines.append(row.map { cell in cell.value.map(CSVCell.number) ?? CSVCell.text(cell.text) }.joined(separator: ","))
        }
        return lines.joined(separator: "\r\n") + "\r\n"
    }

    /// Analytics rows as a table: group fields and counts as they come, rates as rates, and a
    /// prompt's `choices` map spread into one column per choice (`choice:allowOnce`).
    static func analytics(id: String, title: String, rows: [AnalyticsQuery.Row]) -> DashboardTable {
        var columns: [String] = []
        var choiceNames: [String] = []
        for row in rows {
            for (name, value) in row {
                if case .object(let choices) = value {
                    for choice in choices.keys.sorted() where !choiceNames.contains(choice) { choiceNames.append(choice) }
                } else if !columns.contains(name) {
                    columns.append(name)
                }
            }
        }
        let rateColumns: Set<String> = ["grantRate", "alwaysRate"]
        let body = rows.map { row -> [Cell] in
            let values = Dictionary(row, uniquingKeysWith: { first, _ in first })
            var cells = columns.map { name -> Cell in
                switch values[name] {
                case .number(let number)?: return rateColumns.contains(name) ? .rate(number) : .count(number)
                case .null?, nil: return rateColumns.contains(name) ? .rate(nil) : .text("")
                case .string(let text)?: return .text(text)
                case .bool(let flag)?: return .text(flag ? "true" : "false")
                default: return .text("")
                }
            }
            if case .object(let choices)? = values["choices"] {
                cells += choiceNames.map { name in
                    if case .number(let count)? = choices[name] { return .count(count) }
                    return .count(0)
                }
            }
            return cells
        }
        return DashboardTable(id: id, title: title, columns: columns + choiceNames.map { "choice:\($0)" }, rows: body)
    }
}
