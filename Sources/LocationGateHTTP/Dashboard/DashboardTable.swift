import Foundation
import LocationGateJSON
import LocationGateService

/// A table as a dashboard page shows it and as its CSV link downloads it. Numbers keep the
/// analytics API's exact value (in `data-value` and in the CSV); the page shows rates as
/// percentages. Cells are text, escaped wherever they are written (`DashboardTable+Body.swift`).
///
/// SPEC §8: no table runs wider than its card, so what would be many narrow columns is folded
/// into one cell: a prompt's choices are one cell of named counts ("allowWhileUsing 120 ·
/// allowOnce 30"), each with its exact value, and the CSV spreads them back into a column each
/// (`choices:allowOnce`); an event's data is one cell of named fields, one a line.
struct DashboardTable {
    struct Cell {
        /// One named part of a cell: a choice with its count, an event's data field.
        struct Part {
            var name: String
            var text: String
            /// The exact number of a count; nil for a field.
            var value: String? = nil
        }

        var text: String
        /// The exact number, as the API gives it; nil for text.
        var value: String?
        /// Shown marked (an inferred answer or its correction, O2).
        var marked = false
        /// Named counts folded into this cell (a prompt's choices).
        var counts: [Part] = []
        /// Named fields shown one a line (an event's data, the decisions after it).
        var fields: [Part] = []
        /// An API name shown under the text (an event's type under its sentence).
        var code: String? = nil

        static func text(_ text: String) -> Cell { Cell(text: text) }
        static func marked(_ text: String) -> Cell { Cell(text: text, marked: true) }
        static func count(_ value: Double) -> Cell { Cell(text: String(Int64(value)), value: String(Int64(value))) }
        static func rate(_ value: Double?) -> Cell {
            guard let value else { return Cell(text: "–", value: "") }
            return Cell(text: DecimalText.oneDecimal(value * 100) + "%", value: "\(value)")
        }

        /// A 95% interval folded into one cell of its two bounds (SPEC §16 `ci95`, `ci95Exposed`),
        /// each a named part with its exact value (`low`, `high`); "–" with an empty value when
        /// the API gives null.
        static func interval(_ bounds: (low: Double, high: Double)?) -> Cell {
            guard let bounds else { return Cell(text: "–", value: "") }
            let lowText: String = SVGChart.percent(bounds.low)
            let highText: String = SVGChart.percent(bounds.high)
            let low: Part = Part(name: "low", text: lowText, value: "\(bounds.low)")
            let high: Part = Part(name: "high", text: highText, value: "\(bounds.high)")
            let parts: [Part] = [low, high]
            let text: String = "\(lowText)–\(highText)"
            return Cell(text: text, counts: parts)
        }

        /// A difference of two rates in rate points, signed ("+5.0 pts"), with its exact value
        /// (SPEC §16 `uplift`); "–" for null.
        static func points(_ value: Double?) -> Cell {
            guard let value, value.isFinite else { return Cell(text: "–", value: "") }
            let scaled: Double = value * 100
            let text: String = String(format: "%+.1f pts", scaled)
            return Cell(text: text, value: "\(value)")
        }

        /// A p-value to three decimals ("< 0.001" below that), with its exact value (SPEC §16
        /// `pValue`); "–" for null.
        static func probability(_ value: Double?) -> Cell {
            guard let value, value.isFinite else { return Cell(text: "–", value: "") }
            var text: String = "< 0.001"
            if !(value < 0.001) { text = String(format: "%.3f", value) }
            return Cell(text: text, value: "\(value)")
        }

        /// Counts folded into one cell, in the order given; its text (and its CSV without
        /// the spreading) "name count · name count".
        static func counts(_ parts: [(name: String, count: Double)]) -> Cell {
            let folded = parts.map { Part(name: $0.name, text: SVGChart.count($0.count), value: SVGChart.count($0.count)) }
            return Cell(text: folded.map { "\($0.name) \($0.text)" }.joined(separator: " · "), counts: folded)
        }

        /// Named fields in one cell; its text (and CSV) "name: value, name: value".
        static func fields(_ parts: [(name: String, text: String)]) -> Cell {
            Cell(text: parts.map { "\($0.name): \($0.text)" }.joined(separator: ", "),
                 fields: parts.map { Part(name: $0.name, text: $0.text) })
        }

        /// A sentence with the API name it stands for under it (an event and its type).
        static func described(_ words: String, code: String) -> Cell { Cell(text: words, code: code) }
    }

    var id: String
    var title: String
    var columns: [String]
    var rows: [[Cell]]
    /// The CSV download when it is an API's own (an experiment's results: `GET
    /// /v1/experiments/{key}/results` as CSV, byte for byte); nil to write it from the rows.
    var apiCSV: String? = nil

    /// The table as `table.mustache` shows it, with a CSV link to `csvHref`.
    func view(csvHref: String) -> View {
        View(id: id, title: title, csvHref: csvHref, columns: columns, body: body)
    }

    /// The view model of `table.mustache`: its head as text for the template to escape, its
    /// rows as markup (`Body`).
    struct View {
        var id: String
        var title: String
        var csvHref: String
        var columns: [String]
        var body: Body
    }

    /// The CSV download: a header row, then the rows with exact numbers, lines ended with CRLF
    /// (`CSV`). A column of folded counts is spread into a column per name, in name order
    /// (`choices:allowOnce`), 0 where a row lacks the name.
    var csv: String {
        if let apiCSV { return apiCSV }
        let spread: [[String]] = columns.indices.map { index in
            var names = Set<String>()
            for row in rows where index < row.count {
                for part in row[index].counts { names.insert(part.name) }
            }
            return names.sorted()
        }
        let header = columns.indices.flatMap { index in
            spread[index].isEmpty ? [columns[index]] : spread[index].map { "\(columns[index]):\($0)" }
        }
        let body = rows.map { row in
            row.enumerated().flatMap { index, cell -> [CSV.Field] in
                let names = index < spread.count ? spread[index] : []
                guard !names.isEmpty else { return [cell.value.map(CSV.Field.number) ?? .text(cell.text)] }
                return names.map { name in CSV.Field.number(cell.counts.first { $0.name == name }?.value ?? "0") }
            }
        }
        return CSV.write(header: header, rows: body, lineEnding: .crlf)
    }

    /// Analytics rows as a table: group fields and counts as they come, rates as rates, and a
    /// prompt's `choices` map folded into one cell of counts (`DashboardCharts.counts` orders
    /// them as the prompt offers them).
    static func analytics(id: String, title: String, rows: [AnalyticsQuery.Row]) -> DashboardTable {
        var columns: [String] = []
        for row in rows {
            for (name, _) in row where !columns.contains(name) { columns.append(name) }
        }
        let rateColumns: Set<String> = ["grantRate", "alwaysRate"]
        let body = rows.map { row -> [Cell] in
            let values = Dictionary(row, uniquingKeysWith: { first, _ in first })
            return columns.map { name -> Cell in
                switch values[name] {
                case .number(let number)?: return rateColumns.contains(name) ? .rate(number) : .count(number)
                case .null?, nil: return rateColumns.contains(name) ? .rate(nil) : .text("")
                case .string(let text)?: return .text(text)
                case .bool(let flag)?: return .text(flag ? "true" : "false")
                case .object(let members)?: return .counts(DashboardCharts.counts(members))
                case .array?: return .text("")
                }
            }
        }
        return DashboardTable(id: id, title: title, columns: columns, rows: body)
    }
}
