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

/// What `/readyz` and `/metrics` report, at a cost that does not grow with the log.
public struct EventLogVitals: Sendable, Hashable {
    /// Transaction ids between the oldest running transaction and the next one to start: how
    /// far the readable horizon of the global order trails (0 when nothing is running).
    public var horizonLag: Int64
    /// The planner's estimate of the events stored (`pg_class.reltuples`, kept by ANALYZE and
    /// autovacuum; -1 before the table was first analyzed).
    public var estimatedEvents: Int64
}

extension EventLog {
    /// O(1) at any log size: the snapshot's bounds and a catalog estimate, never count(*).
    public func vitals() async throws -> EventLogVitals {
        try await pool.withConnection { connection in
            let rows = try connection.query(
                """
                SELECT (pg_snapshot_xmax(s)::text::numeric - pg_snapshot_xmin(s)::text::numeric)::bigint,
                       (SELECT coalesce(sum(reltuples), -1)::bigint FROM pg_class
                        WHERE oid = 'events'::regclass OR oid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent = 'events'::regclass))
                FROM pg_current_snapshot() AS s
                """)
            guard let row = rows.first else { return EventLogVitals(horizonLag: 0, estimatedEvents: -1) }
            return EventLogVitals(horizonLag: try row.decode(0), estimatedEvents: try row.decode(1))
        }
    }
}
