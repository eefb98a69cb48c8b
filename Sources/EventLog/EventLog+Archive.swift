import Foundation
import PostgresClient

/// What `locgate archive` reads of the partitions it exports and drops.
extension EventLog {
    /// The header of a plain archive file: every column of `events`. The format is PostgreSQL's
    /// CSV, so `\copy events_restored FROM 'file' CSV HEADER` loads it back into a table shaped
    /// like `events` (`locgate archive read` writes it from a sealed archive).
    public static let archiveHeader =
        "position,tx_id,app_id,user_id,device_id,version,event_id,type,data,occurred_at,recorded_at,outcome\n"

    /// The next events below `boundary` after `position`, in global order. The caller holds the
    /// partitions in SHARE mode, so every row there is committed and no new one comes: no need
    /// to stay below the oldest running transaction. The events come without their outcomes,
    /// which a replay computes again.
    public static func exportPage(
        below boundary: Int64, after position: LogPosition, limit: Int, on connection: PostgresConnection
    ) throws -> [RecordedEvent] {
        try decode(connection.query(
            """
            SELECT \(unescaped: columnsWithoutOutcome)
            FROM events
            WHERE position < \(boundary)
              AND (tx_id, position) > (\(String(position.transactionID))::xid8, \(position.position))
            ORDER BY events.tx_id, events.position
            LIMIT \(limit)
            """))
    }

    /// The next events below `boundary` after `cursor` (a stream and a version of it), in
    /// stream order: by app, user and device, each stream's versions in order; from the first
    /// with no cursor. Like `exportPage`, for partitions that no append writes any more (new
    /// positions are past them). Each partition's unique index on `(app_id, user_id,
    /// device_id, version)` gives the order, so a page costs an index range per partition,
    /// wherever it starts.
    public static func exportStreamPage(
        below boundary: Int64, after cursor: (stream: StreamKey, version: Int64)?, limit: Int, on connection: PostgresConnection
    ) throws -> [RecordedEvent] {
        guard let cursor else {
            return try decode(connection.query(
                """
                SELECT \(unescaped: columnsWithoutOutcome)
                FROM events
                WHERE position < \(boundary)
                ORDER BY events.app_id, events.user_id, events.device_id, events.version
                LIMIT \(limit)
                """))
        }
        return try decode(connection.query(
            """
            SELECT \(unescaped: columnsWithoutOutcome)
            FROM events
            WHERE position < \(boundary)
              AND (app_id, user_id, device_id, version)
                  > (\(cursor.stream.appID), \(cursor.stream.userID), \(cursor.stream.deviceID), \(cursor.version))
            ORDER BY events.app_id, events.user_id, events.device_id, events.version
            LIMIT \(limit)
            """))
    }
}
