import Crypto
import EventLog
import Foundation
import PostgresClient
import Synchronization

/// What an API key may do (SPEC §5).
public enum KeyScope: String, Sendable, Hashable, Codable, CaseIterable {
    /// Append events only: what a device may hold.
    case ingest
    /// Gates, history, analytics.
    case read
    /// All of the app's endpoints, features and keys.
    case admin
}

/// The caller behind a key.
public struct APIIdentity: Sendable, Hashable {
    public var keyID: UUID
    public var appID: UUID
    public var scope: KeyScope
}

/// API keys, stored as SHA-256 of the key (they are 256 random bits, so no salt or slow hash
/// is needed). Verified keys are cached; a revocation notifies `locgate_keys` and every process
/// forgets its cached keys.
public final class APIKeys: Sendable {
    public static let notificationChannel = "locgate_keys"

    private let pool: PostgresConnectionPool
    private let cache = Mutex<[String: APIIdentity]>([:])

    public init(pool: PostgresConnectionPool) {
        self.pool = pool
    }

    /// Makes a key: `lg_` and 43 base64url characters. The text is returned once and never stored.
    public func create(appID: UUID, scope: KeyScope) async throws -> (id: UUID, key: String) {
        let id = UUID()
        let key = Self.newKeyText()
        try await pool.withConnection { connection in
            try Self.insert(id: id, appID: appID, scope: scope, key: key, on: connection)
        }
        return (id, key)
    }

    static func insert(id: UUID, appID: UUID, scope: KeyScope, key: String, on connection: PostgresConnection) throws {
        try connection.query(
            """
            INSERT INTO api_keys (id, app_id, scope, key_hash) VALUES (\(id), \(appID), \(scope.rawValue), \(hash(key)))
            """)
    }

    /// Revokes one of the app's keys; false when the app has no such live key.
    public func revoke(appID: UUID, keyID: UUID) async throws -> Bool {
        let revoked = try await pool.transaction { connection in
            let rows = try connection.query(
                """
                UPDATE api_keys SET revoked_at = now()
                WHERE id = \(keyID) AND app_id = \(appID) AND revoked_at IS NULL
                """)
            try connection.query("SELECT pg_notify(\(Self.notificationChannel), \(keyID.uuidString))")
            return rows.affectedRows > 0
        }
        invalidateAll()
        return revoked
    }

    /// The identity behind a key, or nil for an unknown or revoked key.
    public func identity(forKey key: String) async throws -> APIIdentity? {
        guard key.count <= 200 else { return nil }
        let digest = Self.hash(key)
        if let cached = cache.withLock({ $0[digest] }) { return cached }
        let identity = try await pool.withConnection { connection -> APIIdentity? in
            let rows = try connection.query(
                "SELECT id, app_id, scope FROM api_keys WHERE key_hash = \(digest) AND revoked_at IS NULL")
            guard let row = rows.first, let scope = KeyScope(rawValue: try row.decode(2)) else { return nil }
            return APIIdentity(keyID: try row.decode(0), appID: try row.decode(1), scope: scope)
        }
        if let identity { cache.withLock { $0[digest] = identity } }
        return identity
    }

    public func invalidateAll() {
        cache.withLock { $0 = [:] }
    }

    /// Hex SHA-256 of the key text. On every authenticated request, so no `String(format:)`.
    static func hash(_ key: String) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var hex = [UInt8]()
        hex.reserveCapacity(64)
        for byte in SHA256.hash(data: Data(key.utf8)) {
            hex.append(digits[Int(byte >> 4)])
            hex.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: hex, as: UTF8.self)
    }

    static func newKeyText() -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let base64 = Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
        return "lg_" + base64
    }
}

/// Apps: `POST /v1/apps` and `locgate apps create`.
public struct AppRegistry: Sendable {
    let pool: PostgresConnectionPool

    public init(pool: PostgresConnectionPool) {
        self.pool = pool
    }

    /// Creates an app and its first key, with scope admin, in one transaction.
    public func create(name: String) async throws -> (appID: UUID, apiKey: String) {
        let trimmed = name.trimmingCharacters(in: .whitespacesAndNewlines)
        guard (1...200).contains(trimmed.count) else {
            throw ServiceError(.validationFailed, "name: must be 1 to 200 characters")
        }
        let appID = UUID()
        let key = APIKeys.newKeyText()
        try await pool.transaction { connection in
            try connection.query("INSERT INTO apps (id, name) VALUES (\(appID), \(trimmed))")
            try APIKeys.insert(id: UUID(), appID: appID, scope: .admin, key: key, on: connection)
        }
        return (appID, key)
    }
}
