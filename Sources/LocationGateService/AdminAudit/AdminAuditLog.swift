import EventLog
import Foundation
import LocationAuthorization
import PostgresClient

/// The admin audit trail (SPEC §14): every change to an app's configuration, recorded in the
/// same transaction as the change, so that a change that fails records nothing and one that
/// commits cannot lose its entry. The calls that change configuration (`AppRegistry.create`,
/// `APIKeys.create`/`revoke`, `FeatureCatalog.put`/`patch`/`delete`, `setRetentionDays`,
/// `requestErasure`, `DashboardSessions.start`/`end`) take the `AuditActor` and call
/// `record(_:on:)` inside their transaction, as its last statement.
///
/// An entry holds no key, no hash of one and no user or device id: its target is a key id, a
/// feature key, the app id or an erasure id. A person's erasure therefore leaves the trail as it
/// is (it names no one).
///
/// Entries are ordered by the table's `id` (their position: one sequence for every app), which
/// never leaves the server: the API's id of an entry is a random UUID (`entry_id`), and the
/// cursor `next` is the id of a page's last entry, so that neither tells anything of other
/// apps' activity (SPEC §14 "Guard rails"). Writers of one app take turns on an advisory lock
/// held until their commit, so an app's entries become visible in position order: a reader
/// that pages with `after` never skips one that commits later at a smaller position.
public struct AdminAuditLog: Sendable {
    /// `GET /v1/audit`: 100 entries by default, 1,000 at most.
    public static let defaultLimit = 100
    public static let limitRange = 1...1000

    private let pool: PostgresConnectionPool

    public init(pool: PostgresConnectionPool) {
        self.pool = pool
    }

    /// The advisory lock an app's audit writers take turns on.
    static func lockKey(appID: UUID) -> Int64 {
        Int64(bitPattern: FNV1a.hash(Array("locgate-admin-audit".utf8) + appID.lowercasedText.utf8))
    }

    /// Records `change` in the caller's transaction. Call it last in the transaction: it waits
    /// for the app's other audit writers and holds its lock until the commit.
    public static func record(_ change: AuditChange, on connection: PostgresConnection) throws {
        let details = try JSONText.encode(change.details)
        try connection.query("SELECT pg_advisory_xact_lock(\(lockKey(appID: change.appID)))")
        try connection.query(
            """
            INSERT INTO admin_audit (app_id, actor_kind, actor_key_id, action, target, details)
            VALUES (\(change.appID), \(change.actor.kind), \(change.actor.keyID), \(change.action.rawValue),
                    \(change.target), \(PostgresJSON(details)))
            """)
    }

    /// The app's entries after `after` (an entry's id, as `next` gave it; nil for the first
    /// page), oldest first, at most `limit` (1 to 1,000, else `validationFailed` naming
    /// `limit`). `next` is the last entry's id when more follow, nil at the end. An `after`
    /// that is no entry of the app's is a `validationFailed` naming `after`.
    public func entries(appID: UUID, after: UUID?, limit: Int) async throws(ServiceError) -> AuditPage {
        guard Self.limitRange.contains(limit) else {
            throw ServiceError(.validationFailed, "limit: a whole number from 1 to \(Self.limitRange.upperBound)")
        }
        let start = try await position(of: after, appID: appID, field: "after") ?? 0
        let rows = try await read(
            """
            SELECT entry_id, at, actor_kind, actor_key_id, action, target, details::text FROM admin_audit
            WHERE app_id = \(appID) AND id > \(start)
            ORDER BY id LIMIT \(limit + 1)
            """)
        let page = Array(rows.prefix(limit))
        return AuditPage(entries: page, next: rows.count > limit ? page.last?.id : nil)
    }

    /// The app's newest entries before `before` (an entry's id; nil for the newest), newest
    /// first, at most `limit`: the dashboard's Activity page. `next` is the `before` of the
    /// page of older entries, nil when there are none.
    public func recentEntries(appID: UUID, before: UUID?, limit: Int) async throws(ServiceError) -> AuditPage {
        let limit = min(max(limit, Self.limitRange.lowerBound), Self.limitRange.upperBound)
        let end = try await position(of: before, appID: appID, field: "before") ?? Int64.max
        let rows = try await read(
            """
            SELECT entry_id, at, actor_kind, actor_key_id, action, target, details::text FROM admin_audit
            WHERE app_id = \(appID) AND id < \(end)
            ORDER BY id DESC LIMIT \(limit + 1)
            """)
        let page = Array(rows.prefix(limit))
        return AuditPage(entries: page, next: rows.count > limit ? page.last?.id : nil)
    }

    /// The position of the app's entry `id` in the trail; nil for no id. An id that names no
    /// entry of the app (another app's among them) is a `validationFailed` naming `field`.
    private func position(of id: UUID?, appID: UUID, field: String) async throws(ServiceError) -> Int64? {
        guard let id else { return nil }
        let position: Int64?
        do {
            position = try await pool.query(
                "SELECT id FROM admin_audit WHERE entry_id = \(id) AND app_id = \(appID)"
            ).first?.decode(0, as: Int64.self)
        } catch {
            throw ServiceError.from(error)
        }
        guard let position else {
            throw ServiceError(.validationFailed, "\(field): not an entry of this app's trail (pass a page's next as it was given)")
        }
        return position
    }

    private func read(_ query: PostgresQuery) async throws(ServiceError) -> [AuditEntry] {
        let rows: PostgresRows
        do {
            rows = try await pool.query(query)
        } catch {
            throw ServiceError.from(error)
        }
        do {
            return try rows.map { row -> AuditEntry in
                guard let actor = AuditActor(kind: try row.decode(2), keyID: try row.decodeIfPresent(3, as: UUID.self)) else {
                    throw ServiceError(.internalError, "an audit entry has an unknown actor")
                }
                return AuditEntry(
                    id: try row.decode(0), at: RFC3339.string(from: try row.decode(1, as: Date.self)), actor: actor,
                    action: try row.decode(4), target: try row.decodeIfPresent(5, as: String.self),
                    details: try JSONText.decode([String: AuditDetail].self, try row.decode(6)))
            }
        } catch {
            throw ServiceError.from(error)
        }
    }
}
