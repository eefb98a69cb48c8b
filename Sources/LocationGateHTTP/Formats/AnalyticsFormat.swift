import Foundation
import LocationGateJSON
import LocationGateService

/// Analytics results as JSON (`{"rows": [...]}`) or CSV (a header row, one column per field).
public enum AnalyticsFormat {
    public static func json(_ rows: [AnalyticsQuery.Row]) -> Data {
        Data(AnalyticsQuery.json(rows))
    }

    /// The header comes from the first row (every row of one query has the same fields); the
    /// `choices` map is written as compact JSON in its cell. Lines end with LF (`CSV`).
    public static func csv(_ rows: [AnalyticsQuery.Row], kind: AnalyticsQuery.Kind, groupBy: [AnalyticsQuery.Dimension]) -> String {
        let header = rows.first.map { $0.map(\.0) } ?? (groupBy.map(\.rawValue) + emptyFields(kind))
        return CSV.write(header: header, rows: rows.map { row in row.map { field($0.1) } }, lineEnding: .lf)
    }

    public static func emptyFields(_ kind: AnalyticsQuery.Kind) -> [String] {
        switch kind {
        case .prompts: ["prompt", "shown", "sessionShown", "answered", "inferred", "choices", "grantRate", "alwaysRate"]
        case .statuses: ["status", "count", "blocked"]
        case .escalations: DeviceMilestones.names.map(\.1) + ["effectiveAlways"]
        case .settings: ["upgrades", "downgrades"]
        case .locationButton: LocationButtonCount.fields
        }
    }

    /// One value as a CSV field: numbers as integers when they are whole, text and JSON as text.
    static func field(_ value: JSONNode) -> CSV.Field {
        switch value {
        case .null: return .text("")
        case .bool(let flag): return .text(flag ? "true" : "false")
        case .number(let number):
            return .number(number.rounded() == number && abs(number) < 1e15 ? String(Int64(number)) : String(number))
        case .string(let string): return .text(string)
        case .array, .object:
            var writer = JSONWriter()
            writer.node(value, sortedKeys: true)
            return .text(writer.text)
        }
    }
}
