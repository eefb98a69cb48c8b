import Foundation
import PostgresClient

/// The dashboard's server-side sessions (SPEC §8), kept in `dashboard_sessions` on the primary
/// so that every server sees a sign-in, a sign-out or a revocation as soon as it is committed
/// (SPEC §5 "Coherence"; §9: no sticky sessions). Nothing is cached.
///
/// A session id is 256 random bits (`SystemRandomNumberGenerator`), 43 base64url characters:
/// the cookie's value, returned once and never stored; the table holds its SHA-256, as
/// `APIKeys` holds keys. A session belongs to the key that signed in, and ends
/// - after `idleLimit` without use (checked on every use; `last_used_at` is refreshed at most
///   once per `refreshInterval`, so that a page is not a write each time),
/// - when that key is revoked (every lookup joins `api_keys` on `revoked_at IS NULL`, so the
///   revocation's commit ends its sessions on every server at once),
/// - at sign-out (its row is deleted).
/// An ended session's row is deleted when it is next presented, and at each sign-in of its app.
///
/// A sign-in and a sign-out are recorded in the admin audit trail in their own transaction
/// (`dashboardSignIn`, `dashboardSignOut`; SPEC §14). Their actor is always the session's key,
/// so neither call takes one: the key that signs in starts the session, and the session's own
/// key ends it.
public struct DashboardSessions: Sendable {
    /// A session not used for this long has ended.
    public static let idleLimit: Duration = .seconds(12 * 60 * 60)
    /// `last_used_at` is written at most this often per session.
    public static let refreshInterval: Duration = .seconds(60)

    private let pool: PostgresConnectionPool

    public init(pool: PostgresConnectionPool) {
        self.pool = pool
    }

    /// Starts a session for the key behind `identity` and returns its id (the cookie's value);
    /// nil when the key is revoked (a revocation that overtook the key's lookup). The app's
    /// ended sessions (idle too long, or of a revoked key) are deleted in the same transaction.
    /// The caller decides which scopes may sign in.
    public func start(for identity: APIIdentity) async throws -> String? {
        let id = Self.newSessionID()
        let digest = APIKeys.hash(id)
        let idle = Self.seconds(Self.idleLimit)
        let started = try await pool.transaction { connection in
            try connection.query(
                """
                DELETE FROM dashboard_sessions
                WHERE app_id = \(identity.appID)
                  AND (last_used_at <= now() - interval '1 second' * \(idle)
                       OR key_id IN (SELECT id FROM api_keys WHERE app_id = \(identity.appID) AND revoked_at IS NOT NULL))
                """)
            let rows = try connection.query(
                """
                INSERT INTO dashboard_sessions (id_hash, app_id, key_id)
                SELECT \(digest), app_id, id FROM api_keys
                WHERE id = \(identity.keyID) AND app_id = \(identity.appID) AND revoked_at IS NULL
                """)
            guard rows.affectedRows > 0 else { return false }
            try AdminAuditLog.record(
                AuditChange(
                    appID: identity.appID, actor: .key(identity.keyID), action: .dashboardSignIn,
                    target: identity.keyID.lowercasedText, details: ["scope": .string(identity.scope.rawValue)]),
                on: connection)
            return true
        }
        return started ? id : nil
    }

    /// The key behind a live session, or nil: an id that is not shaped like a session id (no
    /// lookup), an unknown or ended session. One statement: it reads the session with its key,
    /// refreshes `last_used_at` when it is older than `refreshInterval`, and deletes the row of
    /// a session that has ended.
    public func identity(forSession id: String) async throws -> APIIdentity? {
        guard Self.isSessionShaped(id) else { return nil }
        let digest = APIKeys.hash(id)
        let idle = Self.seconds(Self.idleLimit)
        let refresh = Self.seconds(Self.refreshInterval)
        let rows = try await pool.query(
            """
            WITH live AS (
                SELECT s.id_hash, s.key_id, s.app_id, k.scope, s.last_used_at
                FROM dashboard_sessions s
                JOIN api_keys k ON k.id = s.key_id AND k.app_id = s.app_id AND k.revoked_at IS NULL
                WHERE s.id_hash = \(digest) AND s.last_used_at > now() - interval '1 second' * \(idle)
            ), refreshed AS (
                UPDATE dashboard_sessions SET last_used_at = now()
                WHERE id_hash IN (SELECT id_hash FROM live WHERE last_used_at <= now() - interval '1 second' * \(refresh))
            ), ended AS (
                DELETE FROM dashboard_sessions
                WHERE id_hash = \(digest) AND NOT EXISTS (SELECT 1 FROM live)
            )
            SELECT key_id, app_id, scope FROM live
            """)
        guard let row = rows.first, let scope = KeyScope(rawValue: try row.decode(2)) else { return nil }
        return APIIdentity(keyID: try row.decode(0), appID: try row.decode(1), scope: scope)
    }

    /// Ends a session (sign-out): its row is deleted, so no server accepts its id again, and
    /// `dashboardSignOut` is recorded in the same transaction, by the session's key. An id that
    /// names no session ends nothing and records nothing.
    public func end(session id: String) async throws {
        guard Self.isSessionShaped(id) else { return }
        let digest = APIKeys.hash(id)
        try await pool.transaction { connection in
            let rows = try connection.query("DELETE FROM dashboard_sessions WHERE id_hash = \(digest) RETURNING app_id, key_id")
            guard let row = rows.first else { return }
            let appID: UUID = try row.decode(0), keyID: UUID = try row.decode(1)
            try AdminAuditLog.record(
                AuditChange(appID: appID, actor: .key(keyID), action: .dashboardSignOut, target: keyID.lowercasedText),
                on: connection)
        }
    }

    /// 43 base64url characters, as `newSessionID` makes them.
    static func isSessionShaped(_ id: String) -> Bool {
        id.utf8.count == 43 && Base64URL.isAlphabet(id.utf8)
    }

    /// 256 random bits, base64url.
    static func newSessionID() -> String { Base64URL.random() }

    private static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds)
    }
}

extension GateService {
    /// The dashboard's sessions, on the primary (a sign-out or a revocation is seen at once).
    public var dashboardSessions: DashboardSessions { DashboardSessions(pool: pool) }
}
