import Crypto
import EventLog
import LocationAuthorization
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
    /// A device-bound ingest key's token secret (`DeviceToken`): its events need a device
    /// token signed with it. Nil for every other key.
    public var tokenSecret: String?

    public init(keyID: UUID, appID: UUID, scope: KeyScope, tokenSecret: String? = nil) {
        self.keyID = keyID
        self.appID = appID
        self.scope = scope
        self.tokenSecret = tokenSecret
    }
}

/// API keys, stored as SHA-256 of the key (they are 256 random bits, so no salt or slow hash
/// is needed). Verified keys are cached, and so are unknown ones (so that random tokens do not
/// reach the database). A revocation notifies `locgate_keys` with the key's hash, and every
/// process forgets that key alone; a creation notifies nobody (a new key's 256 random bits
/// were never looked up, so no cache can hold it as unknown), so no tenant can empty every
/// process's cache by creating keys. Text that is not shaped like a key (`lg_` and 43 base64url
/// characters) is refused without a lookup. Both caches are bounded (emptied when full), follow
/// `CacheCoherence`, and never store a lookup that an invalidation overtook.
///
/// What is left reaches the database through `KeyLookups` (SPEC §5 "Resources"): every such
/// key is checked, none refused unchecked, in batched statements of which at most a few run at
/// once, so that invalid keys, however many and from wherever, cost a bounded share of the
/// database and never stand in a valid key's way.
public final class APIKeys: Sendable {
    public static let notificationChannel = "locgate_keys"
    /// Verified keys kept at most; the cache is emptied when full.
    public static let maxCachedKeys = 100_000
    /// Unknown keys remembered at most.
    public static let maxUnknownKeys = 10_000

    private struct Cache {
        var known: [String: APIIdentity] = [:]
        var unknown: Set<String> = []
        var epoch: UInt64 = 0
    }

    private let pool: PostgresConnectionPool
    private let coherence: CacheCoherence
    private let cache = Mutex(Cache())
    /// The look-ups that reach the database, batched and bounded.
    let lookups: KeyLookups

    /// - Parameter maxConcurrentLookups: key look-up statements in flight at once; by default a
    ///   quarter of the pool, between 1 and 4.
    public init(
        pool: PostgresConnectionPool, coherence: CacheCoherence = CacheCoherence(alwaysFollowing: true),
        maxConcurrentLookups: Int? = nil
    ) {
        self.pool = pool
        self.coherence = coherence
        self.lookups = KeyLookups(
            pool: pool, maxInFlight: maxConcurrentLookups ?? KeyLookups.defaultMaxInFlight(poolSize: pool.size))
    }

    /// Makes a key: `lg_` and 43 base64url characters. The text is returned once and never
    /// stored. A device-bound ingest key (`deviceBound`) also gets a token secret (`lgs_` and 43
    /// base64url characters), returned once to the app's backend, which signs device tokens
    /// with it; the server keeps it to verify them.
    public func create(appID: UUID, scope: KeyScope, deviceBound: Bool = false) async throws(ServiceError)
        -> (id: UUID, key: String, tokenSecret: String?)
    {
        guard !deviceBound || scope == .ingest else {
            throw ServiceError(.validationFailed, "deviceBound: only an ingest key can be bound to devices")
        }
        let id = UUID()
        let key = Self.newKeyText()
        let secret = deviceBound ? "lgs_" + Base64URL.random() : nil
        do {
            try await pool.transaction { connection in
                try Self.insert(id: id, appID: appID, scope: scope, key: key, tokenSecret: secret, on: connection)
            }
        } catch {
            throw GateService.translate(database: error)
        }
        return (id, key, secret)
    }

    static func insert(
        id: UUID, appID: UUID, scope: KeyScope, key: String, tokenSecret: String? = nil, on connection: PostgresConnection
    ) throws {
        try connection.query(
            """
            INSERT INTO api_keys (id, app_id, scope, key_hash, token_secret)
            VALUES (\(id), \(appID), \(scope.rawValue), \(hash(key)), \(tokenSecret))
            """)
    }

    /// Revokes one of the app's keys; false when the app has no such live key.
    public func revoke(appID: UUID, keyID: UUID) async throws -> Bool {
        let revoked = try await pool.transaction { connection in
            let rows = try connection.query(
                """
                UPDATE api_keys SET revoked_at = now()
                WHERE id = \(keyID) AND app_id = \(appID) AND revoked_at IS NULL
                RETURNING key_hash
                """)
            guard let digest = try rows.first?.decode(0, as: String.self) else { return nil as String? }
            try connection.query("SELECT pg_notify(\(Self.notificationChannel), \(digest))")
            return digest
        }
        guard let revoked else { return false }
        forget(digest: revoked)
        return true
    }

    /// The identity of a key this process has verified and still trusts, without a lookup;
    /// nil when it would have to ask the database.
    public func cachedIdentity(forKey key: String) -> APIIdentity? {
        guard coherence.isFollowing, Self.isKeyShaped(key) else { return nil }
        let digest = Self.hash(key)
        return cache.withLock { $0.known[digest] }
    }

    /// The identity behind a key, or nil for an unknown or revoked key. Text not shaped like a
    /// key and keys remembered as unknown are answered without the database; any other key is
    /// looked up (batched with concurrent look-ups, `KeyLookups`), never refused unchecked.
    public func identity(forKey key: String) async throws -> APIIdentity? {
        guard Self.isKeyShaped(key) else { return nil }
        let digest = Self.hash(key)
        let following = coherence.isFollowing
        let (known, unknown, epoch) = cache.withLock { ($0.known[digest], $0.unknown.contains(digest), $0.epoch) }
        if following {
            if let known { return known }
            if unknown { return nil }
        }
        let identity = try await lookups.identity(digest: digest)
        if following {
            cache.withLock { cache in
                guard cache.epoch == epoch else { return }
                if let identity {
                    if cache.known.count >= Self.maxCachedKeys { cache.known = [:] }
                    cache.known[digest] = identity
                } else {
                    if cache.unknown.count >= Self.maxUnknownKeys { cache.unknown = [] }
                    cache.unknown.insert(digest)
                }
            }
        }
        return identity
    }

    /// `lg_` and 43 base64url characters, as `newKeyText` makes them.
    static func isKeyShaped(_ key: String) -> Bool {
        let bytes = key.utf8
        guard bytes.count == 46, bytes.starts(with: "lg_".utf8) else { return false }
        return Base64URL.isAlphabet(bytes.dropFirst(3))
    }

    /// Cached keys known and unknown (a gauge for `/metrics`).
    public var cachedCount: Int { cache.withLock { $0.known.count + $0.unknown.count } }

    /// Forgets one key (by its hash), known or unknown: a revocation, here or in another
    /// process. A lookup in flight does not store what it read (the epoch moved).
    public func forget(digest: String) {
        cache.withLock { cache in
            cache.epoch &+= 1
            cache.known.removeValue(forKey: digest)
            cache.unknown.remove(digest)
        }
    }

    public func invalidateAll() {
        cache.withLock { cache in
            cache.epoch &+= 1
            cache.known = [:]
            cache.unknown = []
        }
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
        "lg_" + Base64URL.random()
    }
}

/// Apps: `POST /v1/apps` and `locgate apps create`.
public struct AppRegistry: Sendable {
    let pool: PostgresConnectionPool

    public init(pool: PostgresConnectionPool) {
        self.pool = pool
    }

    /// Creates an app and its first key, with scope admin, in one transaction.
    /// The name is stored exactly as given: 1 to 200 bytes of UTF-8 without control
    /// characters (SPEC §1), never trimmed or shortened.
    public func create(name: String) async throws -> (appID: UUID, apiKey: String) {
        do {
            try ClientText.check(name, field: "name", bytes: 1...200)
        } catch {
            throw ServiceError(.validationFailed, error.message)
        }
        let appID = UUID()
        let key = APIKeys.newKeyText()
        try await pool.transaction { connection in
            try connection.query("INSERT INTO apps (id, name) VALUES (\(appID), \(name))")
            try APIKeys.insert(id: UUID(), appID: appID, scope: .admin, key: key, on: connection)
        }
        return (appID, key)
    }
}
