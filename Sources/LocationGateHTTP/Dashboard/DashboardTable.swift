import Foundation
import LocationGateJSON
import LocationGateService

/// A table as a dashboard page shows it and as its CSV link downloads it. Numbers keep the
/// analytics API's exact value (in `data-value` and in the CSV); the page shows rates as
/// percentages. Cells are text: `table.mustache` escapes each one.
struct DashboardTable {
    struct Cell {
        var text: String
        /// The exact number, as the API gives it; nil for text.
        var value: String?
        /// Shown marked (an inferred answer or its correction, O2).
        var marked = false

        static func text(_ text: String) -> Cell { Cell(text: text) }
        static func marked(_ text: String) -> Cell { Cell(text: text, marked: true) }
        static func count(_ value: Double) -> Cell { Cell(text: String(Int64(value)), value: String(Int64(value))) }
        static func rate(_ value: Double?) -> Cell {
            guard let value else { return Cell(text: "–", value: "") }
            return Cell(text: String(format: "%.1f%%", value * 100), value: "\(value)")
        }
    }

    var id: String
    var title: String
    var columns: [String]
    var rows: [[Cell]]

    /// The table as `table.mustache` shows it, with a CSV link to `csvHref`.
    func view(csvHref: String) -> View {
        View(
            id: id, title: title, csvHref: csvHref, columns: columns,
            rows: rows.map { row in
                View.Row(cells: row.map { cell in
                    View.Cell(text: cell.text, value: cell.value ?? "", isNumber: cell.value != nil, marked: cell.marked)
                })
            },
            columnCount: max(1, columns.count))
    }

    /// The view model of `table.mustache`. Nothing in it is optional: a name Mustache does not
    /// find on the innermost object is looked for on the objects around it.
    struct View {
        struct Cell {
            var text: String
            /// The exact number for `data-value`; empty for text.
            var value: String
            var isNumber: Bool
            var marked: Bool
        }

        struct Row {
            var cells: [Cell]
        }

        var id: String
        var title: String
        var csvHref: String
        var columns: [String]
        var rows: [Row]
        /// The span of the one cell of an empty table.
        var columnCount: Int
    }

    /// The CSV download: a header row, then the rows with exact numbers, lines ended with CRLF
    /// (`CSV`).
    var csv: String {
        CSV.write(
            header: columns,
            rows: rows.map { row in row.map { cell in cell.value.map(CSV.Field.number) ?? .text(cell.text) } },
            lineEnding: .crlf)
    }

    /// Analytics rows as a table: group fields and counts as they come, rates as rates, and a
    /// prompt's `choices` map spread into one column per choice (`choice:allowOnce`).
    static func analytics(id: String, title: String, rows: [AnalyticsQuery.Row]) -> DashboardTable {
        var columns: [String] = []
        var choiceNames: [String] = []
        for row in rows {
            for (name, value) in row {
                if case .object(let choices) = value {
                    for choice in choices.map(\.key).sorted() where !choiceNames.contains(choice) { choiceNames.append(choice) }
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
            if let choices = values["choices"], case .object = choices {
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
