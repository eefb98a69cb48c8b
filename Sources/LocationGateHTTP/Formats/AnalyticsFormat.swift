import Foundation
import LocationGateService

/// Analytics results as JSON (`{"rows": [...]}`) or CSV (a header row, one column per field).
public enum AnalyticsFormat {
    public static func json(_ rows: [AnalyticsQuery.Row]) throws -> Data {
        struct Rows: Encodable { var rows: [JSONValue] }
        let objects = rows.map { row in JSONValue.object(Dictionary(row, uniquingKeysWith: { first, _ in first })) }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return try encoder.encode(Rows(rows: objects))
    }

    /// The header comes from the first row (every row of one query has the same fields); the
    /// `choices` map is written as compact JSON in its cell.
    public static func csv(_ rows: [AnalyticsQuery.Row], kind: AnalyticsQuery.Kind, groupBy: [AnalyticsQuery.Dimension]) -> String {
        let header = rows.first.map { $0.map(\.0) } ?? (groupBy.map(\.rawValue) + emptyFields(kind))
        var lines = [header.joined(separator: ",")]
        for row in rows {
            lines.append(row.map { cell($0.1) }.joined(separator: ","))
        }
        return lines.joined(separator: "\n") + "\n"
    }

    public static func emptyFields(_ kind: AnalyticsQuery.Kind) -> [String] {
        switch kind {
        case .prompts: ["prompt", "shown", "sessionShown", "answered", "inferred", "choices", "grantRate", "alwaysRate"]
        case .statuses: ["status", "count", "blocked"]
        case .escalations: DeviceMilestones.names.map(\.1) + ["effectiveAlways"]
        case .settings: ["upgrades", "downgrades"]
        }
    }

    static func cell(_ value: JSONValue) -> String {
        let text: String
        switch value {
        case .null: return ""
        case .bool(let flag): return flag ? "true" : "false"
        case .number(let number):
            return number.rounded() == number && abs(number) < 1e15 ? String(Int64(number)) : String(number)
        case .string(let string): text = string
        case .array, .object:
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            text = (try? encoder.encode(value)).map { String(decoding: $0, as: UTF8.self) } ?? ""
        }
        return CSVCell.text(text)
    }
}
