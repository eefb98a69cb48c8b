import Foundation
import PostgresClient

/// What retention reads of the log: an app's oldest events, and the persons' locks.
extension EventLog {
    /// The app's oldest events still in the log, in global order, up to `until` (events after
    /// it are not counted by the analytics rollup yet), `limit` at most. Reads the index that
    /// starts with the app (`events_app_global_order`), so a run over an app whose old events
    /// are gone reads only the few it keeps.
    public static func oldestEvents(
        appID: UUID, until: LogPosition, limit: Int, on connection: PostgresConnection
    ) throws -> [RecordedEvent] {
        try decode(connection.query(
            """
            SELECT \(unescaped: columns) FROM events
            WHERE app_id = \(appID)
              AND (tx_id, position) <= (\(String(until.transactionID))::xid8, \(until.position))
            ORDER BY events.tx_id, events.position
            LIMIT \(limit)
            """))
    }

    /// Takes the persons' locks shared for the transaction, as appends do: an erasure of one
    /// of them (which takes its lock exclusively) waits, or is waited for.
    public static func lockPersonsShared(_ persons: [(appID: UUID, userID: String)], on connection: PostgresConnection) throws {
        let keys = Set(persons.map { userLockKey(appID: $0.appID, userID: $0.userID) }).sorted()
        try connection.query(
            "SELECT count(pg_advisory_xact_lock_shared(u)) FROM unnest(\(PostgresArray(keys))) WITH ORDINALITY AS p(u, n)")
    }
}
