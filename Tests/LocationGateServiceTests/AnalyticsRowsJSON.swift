import Foundation
import LocationGateService

/// Analytics rows as one comparable JSON document (keys sorted), so that a test can check that
/// a rebuild or an archive leaves every count as it was: the rendering the analytics API
/// answers with (`AnalyticsQuery.json`).
enum AnalyticsRowsJSON {
    static func json(_ rows: [AnalyticsQuery.Row]) throws -> Data {
        Data(AnalyticsQuery.json(rows))
    }
}
