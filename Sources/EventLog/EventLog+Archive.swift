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
    /// PostgreSQL writes the lines (quoting in C is about ten times faster than in Swift here);
    /// the events come without their outcomes, which a replay computes again.
    public static func exportPage(
        below boundary: Int64, after position: LogPosition, limit: Int, on connection: PostgresConnection
    ) throws -> (events: [RecordedEvent], csv: String) {
        let rows = try connection.query(
            """
            SELECT \(unescaped: columnsWithoutOutcome),
                   concat_ws(',', position, tx_id, app_id, \(unescaped: csv("user_id")), \(unescaped: csv("device_id")), version,
                             event_id, \(unescaped: csv("type")), \(unescaped: csv("data::text")), \(unescaped: csv("occurred_at::text")),
                             \(unescaped: csv("recorded_at::text")), CASE WHEN outcome IS NULL THEN '' ELSE \(unescaped: csv("outcome::text")) END)
            FROM events
            WHERE position < \(boundary)
              AND (tx_id, position) > (\(String(position.transactionID))::xid8, \(position.position))
            ORDER BY events.tx_id, events.position
            LIMIT \(limit)
            """)
        let events = try decode(rows)
        var csv = ""
        for row in rows {
            csv += try row.decode(12, as: String.self)
            csv += "\n"
        }
        return (events, csv)
    }

    /// A CSV field in SQL: always quoted (so an empty text is not read back as NULL), quotes
    /// doubled.
    static func csv(_ expression: String) -> String {
        "'\"' || replace(\(expression), '\"', '\"\"') || '\"'"
    }
}
