import PostgresClient

/// Counts for `locgate status` and `/readyz`.
public struct EventLogHealth: Sendable, Hashable {
    public var events: Int64
    public var streams: Int64
    /// Events committed but not yet readable in global order because an older transaction is
    /// still running: the horizon lag subscribers wait on.
    public var unreadableEvents: Int64
}

extension EventLog {
    public func health() async throws -> EventLogHealth {
        try await pool.withConnection { connection in
            let rows = try connection.query(
                """
                SELECT (SELECT count(*) FROM events),
                       (SELECT count(*) FROM streams),
                       (SELECT count(*) FROM events WHERE tx_id >= pg_snapshot_xmin(pg_current_snapshot()))
                """)
            guard let row = rows.first else { return EventLogHealth(events: 0, streams: 0, unreadableEvents: 0) }
            return EventLogHealth(events: try row.decode(0), streams: try row.decode(1), unreadableEvents: try row.decode(2))
        }
    }
}
