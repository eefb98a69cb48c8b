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
/// - at sign-out (its row is deleted),
/// - when its key signs in a `sessionsPerKey`-th more recent session (SPEC §14).
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

    /// What a sign-in came to (`start(for:)`).
    public enum SignIn: Sendable, Hashable {
        /// A session started: its id, the cookie's value.
        case started(String)
        /// The key is revoked (a revocation that overtook the key's lookup).
        case keyRevoked
        /// The key signed in `signInLimit` times in the last `signInWindow`: nothing started or
        /// recorded; a sign-in may succeed again after `retryAfter` seconds.
        case limited(retryAfter: Int)
    }

    /// Sign-ins of one key at most in any `signInWindow` (SPEC §14 "Guard rails"), so that a
    /// key, a read key included, cannot flood the audit trail or the sessions' table.
    public static let signInLimit = 10
    public static let signInWindow: Duration = .seconds(60)
    /// Live sessions of one key at most: signing in one more ends its oldest.
    public static let sessionsPerKey = 20

    /// Starts a session for the key behind `identity` and returns its id (the cookie's value).
    /// The app's ended sessions (idle too long, or of a revoked key) are deleted in the same
    /// transaction. The caller decides which scopes may sign in.
    ///
    /// SPEC §14 "Guard rails": a key signs in at most `signInLimit` times in any `signInWindow`
    /// (its `dashboardSignIn` entries of the trail are counted, on every server alike) and
    /// holds at most `sessionsPerKey` live sessions (a new one ends the oldest). The key's row
    /// is locked first, so that a key's sign-ins take turns and concurrent ones cannot all
    /// pass the count.
    public func start(for identity: APIIdentity) async throws -> SignIn {
        let id = Self.newSessionID()
        let digest = APIKeys.hash(id)
        let idle = Self.seconds(Self.idleLimit)
        let window = Self.seconds(Self.signInWindow)
        return try await pool.transaction { connection -> SignIn in
            let live = try connection.query(
                """
                SELECT 1 FROM api_keys WHERE id = \(identity.keyID) AND app_id = \(identity.appID) AND revoked_at IS NULL
                FOR NO KEY UPDATE
                """)
            guard live.count > 0 else { return .keyRevoked }
            let recent = try connection.query(
                """
                SELECT count(*), ceil(extract(epoch FROM min(at) + interval '1 second' * \(window) - clock_timestamp()))::bigint
                FROM (SELECT at FROM admin_audit
                      WHERE actor_key_id = \(identity.keyID) AND action = 'dashboardSignIn'
                        AND at > clock_timestamp() - interval '1 second' * \(window)
                      ORDER BY at DESC LIMIT \(Self.signInLimit)) latest
                """)
            if let row = recent.first, try row.decode(0, as: Int64.self) >= Int64(Self.signInLimit) {
                let wait = try row.decodeIfPresent(1, as: Int64.self) ?? 1
                return .limited(retryAfter: Int(min(max(wait, 1), Int64(window))))
            }
            try connection.query(
                """
                DELETE FROM dashboard_sessions
                WHERE app_id = \(identity.appID)
                  AND (last_used_at <= now() - interval '1 second' * \(idle)
                       OR key_id IN (SELECT id FROM api_keys WHERE app_id = \(identity.appID) AND revoked_at IS NOT NULL))
                """)
            let rows = try connection.query(
                """
                INSERT INTO dashboard_sessions (id_hash, app_id, key_id, created_at, last_used_at)
                SELECT \(digest), app_id, id, clock_timestamp(), clock_timestamp() FROM api_keys
                WHERE id = \(identity.keyID) AND app_id = \(identity.appID) AND revoked_at IS NULL
                """)
            guard rows.affectedRows > 0 else { return .keyRevoked }
            // The key's oldest sessions beyond the bound end (the new one is the newest).
            try connection.query(
                """
                DELETE FROM dashboard_sessions
                WHERE id_hash IN (SELECT id_hash FROM dashboard_sessions
                                  WHERE key_id = \(identity.keyID) AND id_hash <> \(digest)
                                  ORDER BY created_at DESC, id_hash OFFSET \(Self.sessionsPerKey - 1))
                """)
            try AdminAuditLog.record(
                AuditChange(
                    appID: identity.appID, actor: .key(identity.keyID), action: .dashboardSignIn,
                    target: identity.keyID.lowercasedText, details: ["scope": .string(identity.scope.rawValue)]),
                on: connection)
            return .started(id)
        }
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
