import Foundation
import LocationAuthorization
import Logging
import PostgresClient
import ServiceLifecycle

/// Writes each new state's decision form (`DeviceState.decisionForm`) and content hash into
/// `state_forms`, and each form once into `decision_forms`, off the append path: a background
/// service of every server (`GateService.backgroundServices`). A state is added with an empty
/// row (migration 024's trigger); the writer reads a page of them, decodes each state once,
/// and fills the rows; then it copies the form's id and content hash onto the state's rows of
/// `device_counts`, which a preview reads without a join. Servers share the queue (`FOR UPDATE
/// SKIP LOCKED`): none waits on another, and no state is written twice.
///
/// A preview or the dashboard's coverage then reads forms, a few however many states devices
/// report, instead of decoding every state (`StateKindScan`); a state still in the queue is
/// read whole, so their answers never wait for the writer.
public struct DecisionFormWriter: Service {
    let pool: PostgresConnectionPool
    let logger: Logger
    /// The pause after a pass that found the queue empty.
    let idle: Duration

    /// States written per transaction.
    static let pageSize = 500

    public init(pool: PostgresConnectionPool, logger: Logger, idle: Duration = .seconds(1)) {
        self.pool = pool
        self.logger = logger
        self.idle = idle
    }

    public func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                var pause = idle
                do {
                    if try await writePage() == Self.pageSize { pause = .zero }
                } catch where Task.isCancelled {
                    break
                } catch {
                    logger.warning("writing decision forms failed; the next pass tries again", metadata: ["error": "\(String(reflecting: error))"])
                    pause = idle * 5
                }
                if pause > .zero { try? await Task.sleep(for: pause) }
            }
        }
    }

    /// Writes the forms of one page of the queue; returns the states written.
    @discardableResult
    public func writePage() async throws -> Int {
        try await pool.transaction { connection in
            try Self.writePage(on: connection)
        }
    }

    /// Writes every form in the queue (tests, and `catchUp` before a measurement).
    public func writeAll() async throws {
        while try await writePage() == Self.pageSize {}
    }

    static func writePage(on connection: PostgresConnection) throws -> Int {
        let formed = try writeForms(on: connection)
        // Rows left behind (skipped while an append held them, or a state's lane written
        // since) once the queue is empty: then every row the pass looks at has its form.
        return formed > 0 ? formed : try copyToCounts(on: connection)
    }

    /// Gives the count rows of formed states (those just formed, and a state's lane written
    /// since) the form's id and content hash, a page at a time; returns the rows changed. Rows
    /// an append holds are skipped, never waited for (the writer never waits on an append, so
    /// the two cannot deadlock), and taken by a later pass.
    static func copyToCounts(on connection: PostgresConnection) throws -> Int {
        let rows = try connection.query(
            """
            WITH due AS (
                SELECT c.app_id, c.lane, c.state_id, s.form_id, s.content_hash
                FROM device_counts c JOIN state_forms s ON s.state_id = c.state_id
                WHERE c.form_id IS NULL AND s.form_id IS NOT NULL
                LIMIT \(Int64(pageSize)) FOR UPDATE OF c SKIP LOCKED)
            UPDATE device_counts c SET form_id = due.form_id, content_hash = due.content_hash
            FROM due WHERE (c.app_id, c.lane, c.state_id) = (due.app_id, due.lane, due.state_id)
            RETURNING 1
            """)
        return rows.count
    }

    /// Writes the forms of a page of the states still without one.
    static func writeForms(on connection: PostgresConnection) throws -> Int {
        let rows = try connection.query(
            """
            SELECT f.state_id, k.state::text FROM state_forms f JOIN device_state_kinds k USING (state_id)
            WHERE f.form_id IS NULL LIMIT \(Int64(pageSize)) FOR UPDATE OF f SKIP LOCKED
            """)
        guard !rows.isEmpty else { return 0 }
        var ids: [Int64] = []
        var forms: [String?] = []
        for row in rows {
            ids.append(try row.decode(0))
            // A state this release cannot read keeps no form (form 0): it is counted, not decided.
            let state = try? JSONText.state(try row.decode(1, as: String.self))
            forms.append(state?.decisionForm.storedJSON)
        }
        try connection.query(
            """
            WITH n AS (
                SELECT id, form, CASE WHEN form IS NULL THEN 0 ELSE hashtextextended(form::text, 0) END AS form_id
                FROM unnest(\(PostgresArray(ids)), \(PostgresArray(json: forms))) AS n(id, form)),
            added AS (
                INSERT INTO decision_forms (form_id, form)
                SELECT DISTINCT ON (form_id) form_id, form FROM n WHERE form IS NOT NULL ORDER BY form_id
                ON CONFLICT (form_id) DO NOTHING)
            UPDATE state_forms f SET form_id = n.form_id, content_hash = coalesce(jsonb_hash_extended(k.state, 0), 0)
            FROM n JOIN device_state_kinds k ON k.state_id = n.id
            WHERE f.state_id = n.id
            """)
        // The states' count rows, by the index on `state_id`; rows an append holds are skipped.
        try connection.query(
            """
            WITH due AS (
                SELECT c.app_id, c.lane, c.state_id FROM device_counts c
                WHERE c.state_id = ANY(\(PostgresArray(ids))) AND c.form_id IS NULL
                FOR UPDATE SKIP LOCKED)
            UPDATE device_counts c SET form_id = s.form_id, content_hash = s.content_hash
            FROM due JOIN state_forms s ON s.state_id = due.state_id
            WHERE (c.app_id, c.lane, c.state_id) = (due.app_id, due.lane, due.state_id)
            """)
        return rows.count
    }
}
