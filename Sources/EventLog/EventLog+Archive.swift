import Foundation
import PostgresClient

/// What `locgate archive` reads of the partitions it exports and drops.
extension EventLog {
    /// The header of an archive file: every column of `events`, in the order of `exportPage`.
    /// The file is PostgreSQL's CSV format, so `\copy events_restored FROM 'file' CSV HEADER`
    /// loads it back into a table shaped like `events`.
    public static let archiveHeader =
        "position,tx_id,app_id,user_id,device_id,version,event_id,type,data,occurred_at,recorded_at,outcome\n"

    /// The next events below `boundary` after `position`, in global order, with each one's line
    /// of the archive file. The caller holds the partitions in SHARE mode, so every row there is
    /// committed and no new one comes: no need to stay below the oldest running transaction.
    public static func exportPage(
        below boundary: Int64, after position: LogPosition, limit: Int, on connection: PostgresConnection
    ) throws -> (events: [RecordedEvent], csv: String) {
        let rows = try connection.query(
            """
            SELECT \(unescaped: columns), occurred_at::text, recorded_at::text FROM events
            WHERE position < \(boundary)
              AND (tx_id, position) > (\(String(position.transactionID))::xid8, \(position.position))
            ORDER BY events.tx_id, events.position
            LIMIT \(limit)
            """)
        let events = try decode(rows)
        var csv = ""
        for (row, event) in zip(rows, events) {
            let outcome = event.outcome.map(csvField) ?? ""
            csv += "\(event.logPosition.position),\(event.logPosition.transactionID),\(event.stream.appID.uuidString.lowercased()),"
            csv += "\(csvField(event.stream.userID)),\(csvField(event.stream.deviceID)),\(event.version),"
            csv += "\(event.id.uuidString.lowercased()),\(csvField(event.type)),\(csvField(event.data)),"
            csv += "\(csvField(try row.decode(12, as: String.self))),\(csvField(try row.decode(13, as: String.self))),\(outcome)\n"
        }
        return (events, csv)
    }

    /// A CSV field, always quoted (so an empty text is not read back as NULL), quotes doubled.
    static func csvField(_ text: String) -> String {
        "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}
