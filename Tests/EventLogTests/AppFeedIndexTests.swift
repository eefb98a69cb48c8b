import EventLog
import Foundation
import LocationGateTestSupport
import PostgresClient
import Testing

/// One app's change feed reads that app's events through an index that starts with the app,
/// on every partition, those created later included: a small app's feed from the start never
/// walks the other apps' log.
@Suite("The per-app change feed's index", .timeLimit(.minutes(2)))
struct AppFeedIndexTests {
    @Test("Every partition has (app_id, tx_id, position), and the feed's query scans it in order without a sort")
    func feedUsesTheAppIndex() async throws {
        let pool = try await TestDatabase.privatePool(prefix: "locgate_feed_index", size: 2)
        // A partition created after the migration gets the index too.
        try await pool.query("SELECT locgate_ensure_event_partitions()")
        let missing = try await pool.query(
            """
            SELECT count(*) FROM pg_inherits i
            WHERE i.inhparent = 'events'::regclass AND NOT EXISTS (
                SELECT 1 FROM pg_index x
                WHERE x.indrelid = i.inhrelid
                  AND pg_get_indexdef(x.indexrelid) LIKE '%(app_id, tx_id, "position")%')
            """).first?.decode(0, as: Int64.self)
        #expect(missing == 0)
        let plan = try await pool.transaction { connection -> String in
            try connection.query("SET LOCAL enable_seqscan = off")
            let rows = try connection.query(
                """
                EXPLAIN SELECT position FROM events
                WHERE (tx_id, position) > ('0'::xid8, 0) AND tx_id < pg_snapshot_xmin(pg_current_snapshot())
                  AND app_id = '00000000-0000-0000-0000-000000000001'::uuid
                ORDER BY events.tx_id, events.position LIMIT 100
                """)
            return try rows.map { try $0.decode(0, as: String.self) }.joined(separator: "\n")
        }
        #expect(plan.contains("app_id_tx_id_position") || plan.contains("events_app_global_order"), "\(plan)")
        // No Sort node (a Merge Append's "Sort Key" keeps the index's order without one).
        #expect(!plan.contains("Sort  ("), "\(plan)")
        await pool.close()
    }
}
