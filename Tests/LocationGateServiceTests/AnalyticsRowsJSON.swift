import Foundation
import LocationGateService

/// Analytics rows as one comparable JSON document (keys sorted), so that a test can check that
/// a rebuild or an archive leaves every count as it was. The wire format itself is the HTTP
/// layer's (`AnalyticsFormat`); this is only a stable rendering of the same rows.
enum AnalyticsRowsJSON {
    static func json(_ rows: [AnalyticsQuery.Row]) throws -> Data {
        struct Rows: Encodable { var rows: [JSONValue] }
        let objects = rows.map { row in JSONValue.object(Dictionary(row, uniquingKeysWith: { first, _ in first })) }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return try encoder.encode(Rows(rows: objects))
    }
}
