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
///
/// A key's `lastUsedAt` (SPEC §14) is accurate to a minute without a write per request: a use
/// is noted in memory, and only a key's first use in `useInterval` (a minute) on this process
/// is queued for writing. One task at a time writes the queued keys in one statement, off the
/// request that noted them; a write that fails is dropped (the key's next use queues it again).
public final class APIKeys: Sendable {
    public static let notificationChannel = "locgate_keys"
    /// Verified keys kept at most; the cache is emptied when full.
    public static let maxCachedKeys = 100_000
    /// Unknown keys remembered at most.
    public static let maxUnknownKeys = 10_000

    private struct Cache {
        var known: [KeyDigest: APIIdentity] = [:]
        var unknown: Set<KeyDigest> = []
        var epoch: UInt64 = 0
        /// When each key's use was last queued for writing (bounded as `known`).
        var usesNoted: [UUID: ContinuousClock.Instant] = [:]
        /// Keys whose use waits to be written.
        var usesQueued: Set<UUID> = []
        /// Whether a task is writing uses now.
        var writingUses = false
        /// Statements that wrote uses (tests).
        var useWrites = 0

        /// Notes a use of `keyID` at `now`; true when the caller must start the task that
        /// writes queued uses.
        mutating func noteUse(of keyID: UUID, at now: ContinuousClock.Instant, interval: Duration) -> Bool {
            if let noted = usesNoted[keyID], noted.duration(to: now) < interval { return false }
            if usesNoted.count >= APIKeys.maxCachedKeys { usesNoted = [:] }
            usesNoted[keyID] = now
            usesQueued.insert(keyID)
            guard !writingUses else { return false }
            writingUses = true
            return true
        }
    }

    private let pool: PostgresConnectionPool
    private let coherence: CacheCoherence
    private let cache = Mutex(Cache())
    /// The look-ups that reach the database, batched and bounded.
    let lookups: KeyLookups
    /// The keys that hold push streams open, closed when revoked.
    let revocations = KeyRevocations()
    /// A key's use is written at most once per this interval per process.
    let useInterval: Duration

    /// - Parameters:
    ///   - maxConcurrentLookups: key look-up statements in flight at once; by default a
    ///     quarter of the pool, between 1 and 4.
    ///   - useInterval: how often at most a key's `lastUsedAt` is written (a minute).
    public init(
        pool: PostgresConnectionPool, coherence: CacheCoherence = CacheCoherence(alwaysFollowing: true),
        maxConcurrentLookups: Int? = nil, useInterval: Duration = .seconds(60)
    ) {
        self.pool = pool
        self.coherence = coherence
        self.useInterval = useInterval
        self.lookups = KeyLookups(
            pool: pool, maxInFlight: maxConcurrentLookups ?? KeyLookups.defaultMaxInFlight(poolSize: pool.size))
    }

    /// Makes a key: `lg_` and 43 base64url characters. The text is returned once and never
    /// stored, only its first 8 characters (`prefix`, for `GET /v1/keys`). A device-bound ingest
    /// key (`deviceBound`) also gets a token secret (`lgs_` and 43 base64url characters),
    /// returned once to the app's backend, which signs device tokens with it; the server keeps
    /// it to verify them. `keyCreated` is recorded in the same transaction (SPEC §14).
    public func create(appID: UUID, scope: KeyScope, deviceBound: Bool = false, actor: AuditActor) async throws(ServiceError)
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
                try AdminAuditLog.record(
                    AuditChange(
                        appID: appID, actor: actor, action: .keyCreated, target: id.lowercasedText,
                        details: ["scope": .string(scope.rawValue), "deviceBound": .bool(deviceBound)]),
                    on: connection)
            }
        } catch {
            throw ServiceError.from(error)
        }
        return (id, key, secret)
    }

    /// The characters of a key that `GET /v1/keys` shows: `lg_` and 5 of its 43 random ones.
    public static let prefixLength = 8

    static func insert(
        id: UUID, appID: UUID, scope: KeyScope, key: String, tokenSecret: String? = nil, on connection: PostgresConnection
    ) throws {
        try connection.query(
            """
            INSERT INTO api_keys (id, app_id, scope, key_hash, token_secret, prefix)
            VALUES (\(id), \(appID), \(scope.rawValue), \(hash(key)), \(tokenSecret), \(String(key.prefix(prefixLength))))
            """)
    }

    /// Revokes one of the app's keys; false when the app has no such live key. `keyRevoked` is
    /// recorded in the same transaction (SPEC §14).
    ///
    /// The app's last live admin key is not revoked (SPEC §14 "Guard rails": 409
    /// `lastAdminKey`), or nobody could change the app's configuration again. The check holds
    /// under concurrency: the app's live admin keys are locked (in id order, so that two
    /// revocations never deadlock) before they are counted, so of two revocations of its last
    /// two admin keys the second waits for the first, counts again and is refused.
    public func revoke(appID: UUID, keyID: UUID, actor: AuditActor) async throws -> Bool {
        let revoked = try await pool.transaction { connection in
            let liveAdmins = try connection.query(
                """
                SELECT id FROM api_keys
                WHERE app_id = \(appID) AND scope = \(KeyScope.admin.rawValue) AND revoked_at IS NULL
                ORDER BY id FOR NO KEY UPDATE
                """
            ).map { try $0.decode(0, as: UUID.self) }
            if liveAdmins == [keyID] {
                throw ServiceError(
                    .lastAdminKey, "this is the app's last admin key: create another admin key before revoking it")
            }
            let rows = try connection.query(
                """
                UPDATE api_keys SET revoked_at = now()
                WHERE id = \(keyID) AND app_id = \(appID) AND revoked_at IS NULL
                RETURNING key_hash, scope
                """)
            guard let row = rows.first else { return nil as String? }
            let digest = try row.decode(0, as: String.self)
            try AdminAuditLog.record(
                AuditChange(
                    appID: appID, actor: actor, action: .keyRevoked, target: keyID.lowercasedText,
                    details: ["scope": .string(try row.decode(1, as: String.self))]),
                on: connection)
            try connection.query("SELECT pg_notify(\(Self.notificationChannel), \(digest))")
            return digest
        }
        guard let revoked else { return false }
        forget(digest: revoked)
        return true
    }

    /// A live key as `GET /v1/keys` lists it: never the key or its hash.
    public struct Listing: Sendable, Hashable, Encodable {
        public var id: UUID
        public var scope: KeyScope
        /// An ingest key whose appends need a device token.
        public var deviceBound: Bool
        public var createdAt: Date
        /// The last request the key authenticated, to a minute; nil when it was never used
        /// (or not since `lastUsedAt` was kept).
        public var lastUsedAt: Date?
        /// The key's first `prefixLength` characters; nil for a key made before they were kept
        /// (only a key's hash was stored then, and it gives nothing back).
        public var prefix: String?

        /// `{"id", "scope", "deviceBound", "createdAt", "lastUsedAt", "prefix"}`: the id in
        /// lower case, times in RFC 3339, nulls written.
        public func encode(to encoder: any Encoder) throws {
            enum Keys: String, CodingKey { case id, scope, deviceBound, createdAt, lastUsedAt, prefix }
            var container = encoder.container(keyedBy: Keys.self)
            try container.encode(id.lowercasedText, forKey: .id)
            try container.encode(scope, forKey: .scope)
            try container.encode(deviceBound, forKey: .deviceBound)
            try container.encode(RFC3339.string(from: createdAt), forKey: .createdAt)
            try container.encode(lastUsedAt.map(RFC3339.string(from:)), forKey: .lastUsedAt)
            try container.encode(prefix, forKey: .prefix)
        }
    }

    /// The app's live (not revoked) keys, oldest first.
    public func list(appID: UUID) async throws(ServiceError) -> [Listing] {
        do {
            return try await pool.query(
                """
                SELECT id, scope, token_secret IS NOT NULL, created_at, last_used_at, prefix FROM api_keys
                WHERE app_id = \(appID) AND revoked_at IS NULL
                ORDER BY created_at, id
                """
            ).compactMap { row -> Listing? in
                guard let scope = KeyScope(rawValue: try row.decode(1)) else { return nil }
                return Listing(
                    id: try row.decode(0), scope: scope, deviceBound: try row.decode(2), createdAt: try row.decode(3),
                    lastUsedAt: try row.decodeIfPresent(4, as: Date.self), prefix: try row.decodeIfPresent(5, as: String.self))
            }
        } catch {
            throw ServiceError.from(error)
        }
    }

    /// The identity of a key this process has verified and still trusts, without a lookup;
    /// nil when it would have to ask the database.
    public func cachedIdentity(forKey key: String) -> APIIdentity? {
        cachedIdentity(forKey: key[...])
    }

    /// The same, for a key read from a request as a slice of its header: hashed from the
    /// slice's bytes, with no string of its own.
    public func cachedIdentity(forKey key: Substring) -> APIIdentity? {
        guard coherence.isFollowing, Self.isKeyShaped(key.utf8) else { return nil }
        let digest = key.utf8.withContiguousStorageIfAvailable { KeyDigest(ofBytes: UnsafeRawBufferPointer($0)) }
            ?? KeyDigest(of: String(key))
        let now = ContinuousClock.now
        let (identity, write) = cache.withLock { cache -> (APIIdentity?, Bool) in
            guard let found = cache.known[digest] else { return (nil, false) }
            return (found, cache.noteUse(of: found.keyID, at: now, interval: useInterval))
        }
        if write { startWritingUses() }
        return identity
    }

    /// The identity behind a key, or nil for an unknown or revoked key. Text not shaped like a
    /// key and keys remembered as unknown are answered without the database; any other key is
    /// looked up (batched with concurrent look-ups, `KeyLookups`), never refused unchecked.
    public func identity(forKey key: String) async throws -> APIIdentity? {
        guard Self.isKeyShaped(key.utf8) else { return nil }
        let digest = KeyDigest(of: key)
        let following = coherence.isFollowing
        let seenAt = ContinuousClock.now
        let (known, unknown, epoch, noted) = cache.withLock { cache -> (APIIdentity?, Bool, UInt64, Bool) in
            guard let found = cache.known[digest] else { return (nil, cache.unknown.contains(digest), cache.epoch, false) }
            let queued = following ? cache.noteUse(of: found.keyID, at: seenAt, interval: useInterval) : false
            return (found, false, cache.epoch, queued)
        }
        if following {
            if let known {
                if noted { startWritingUses() }
                return known
            }
            if unknown { return nil }
        }
        let identity = try await lookups.identity(digest: digest.hex)
        let now = ContinuousClock.now
        let write = cache.withLock { cache -> Bool in
            if following, cache.epoch == epoch {
                if let identity {
                    if cache.known.count >= Self.maxCachedKeys { cache.known = [:] }
                    cache.known[digest] = identity
                } else {
                    if cache.unknown.count >= Self.maxUnknownKeys { cache.unknown = [] }
                    cache.unknown.insert(digest)
                }
            }
            guard let found = identity else { return false }
            return cache.noteUse(of: found.keyID, at: now, interval: useInterval)
        }
        if write { startWritingUses() }
        return identity
    }

    /// Starts the one task that writes queued uses (`noteUse` said none runs).
    private func startWritingUses() {
        Task { await self.writeUses() }
    }

    /// Writes the queued uses, a statement per batch, until none are queued. Rows another
    /// transaction holds (a revocation under way) are skipped rather than waited for, and rows
    /// are locked in id order, so that two processes writing never deadlock.
    private func writeUses() async {
        while true {
            let keyIDs = cache.withLock { cache -> [UUID] in
                let queued = Array(cache.usesQueued)
                cache.usesQueued = []
                if queued.isEmpty { cache.writingUses = false } else { cache.useWrites += 1 }
                return queued
            }
            guard !keyIDs.isEmpty else { return }
            do {
                try await pool.query(
                    """
                    UPDATE api_keys SET last_used_at = now()
                    FROM (SELECT id FROM api_keys WHERE id = ANY(\(PostgresArray(keyIDs))) AND revoked_at IS NULL
                          ORDER BY id FOR UPDATE SKIP LOCKED) used
                    WHERE api_keys.id = used.id
                    """)
            } catch {
                // Not written: the keys' next uses queue them again.
                cache.withLock { cache in
                    for keyID in keyIDs { cache.usesNoted.removeValue(forKey: keyID) }
                }
            }
        }
    }

    /// Statements that wrote `lastUsedAt` so far (tests).
    var useWrites: Int { cache.withLock { $0.useWrites } }

    /// `lg_` and 43 base64url characters, as `newKeyText` makes them.
    static func isKeyShaped<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> Bool {
        guard bytes.count == 46, bytes.starts(with: "lg_".utf8) else { return false }
        return Base64URL.isAlphabet(bytes.dropFirst(3))
    }

    /// Cached keys known and unknown (a gauge for `/metrics`).
    public var cachedCount: Int { cache.withLock { $0.known.count + $0.unknown.count } }

    /// Forgets one key (by its hash), known or unknown: a revocation, here or in another
    /// process. A lookup in flight does not store what it read (the epoch moved). A notice
    /// whose payload is not a hash (no process of this version sends one) empties both caches.
    public func forget(digest text: String) {
        guard let digest = KeyDigest(hex: text) else { return invalidateAll() }
        cache.withLock { cache in
            cache.epoch &+= 1
            cache.known.removeValue(forKey: digest)
            cache.unknown.remove(digest)
        }
        revocations.revoked(digest)
    }

    /// Forgets every key: the revocations notified while this process was not listening are
    /// unknown, so the keys that hold streams open are looked up again, and the streams of
    /// those no longer live are closed (`recheckWatchedKeys`).
    public func invalidateAll() {
        cache.withLock { cache in
            cache.epoch &+= 1
            cache.known = [:]
            cache.unknown = []
        }
        guard revocations.count > 0 else { return }
        Task { await self.recheckWatchedKeys() }
    }

    /// Looks up every key that holds a stream open and closes the streams of those that are no
    /// longer live. A look-up that fails leaves its key's streams open; the next resync looks
    /// again.
    func recheckWatchedKeys() async {
        for digest in revocations.watchedDigests {
            do {
                if try await lookups.identity(digest: digest.hex) == nil { revocations.revoked(digest) }
            } catch {
                continue
            }
        }
    }

    /// Calls `onRevoked` once when `key` is revoked, here or on another process (SPEC §5: the
    /// streams a key opened close when it is revoked), until the watch is cancelled.
    public func watchRevocation(ofKey key: Substring, onRevoked: @escaping @Sendable () -> Void) -> KeyWatch {
        revocations.watch(digest: KeyDigest(of: String(key)), onRevoked: onRevoked)
    }

    /// Keys that hold push streams open now.
    public var watchedKeys: Int { revocations.count }

    /// Hex SHA-256 of the key text, as `api_keys.key_hash` stores it.
    static func hash(_ key: String) -> String {
        KeyDigest(of: key).hex
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

    /// Creates an app and its first key, with scope admin, in one transaction, and records
    /// `appCreated` in it (SPEC §14; the details name the key's id, never the key).
    /// The name is stored exactly as given: 1 to 200 bytes of UTF-8 without control
    /// characters (SPEC §1), never trimmed or shortened.
    public func create(name: String, actor: AuditActor) async throws -> (appID: UUID, apiKey: String, keyID: UUID) {
        do {
            try ClientText.check(name, field: "name", bytes: 1...200)
        } catch {
            throw ServiceError(.validationFailed, error.message)
        }
        let appID = UUID()
        let keyID = UUID()
        let key = APIKeys.newKeyText()
        try await pool.transaction { connection in
            try connection.query("INSERT INTO apps (id, name) VALUES (\(appID), \(name))")
            try APIKeys.insert(id: keyID, appID: appID, scope: .admin, key: key, on: connection)
            try AdminAuditLog.record(
                AuditChange(
                    appID: appID, actor: actor, action: .appCreated, target: appID.lowercasedText,
                    details: ["name": .string(name), "keyId": .string(keyID.lowercasedText)]),
                on: connection)
        }
        return (appID, key, keyID)
    }

    /// The app's name; nil when there is no such app.
    public func name(appID: UUID) async throws(ServiceError) -> String? {
        do {
            return try await pool.query("SELECT name FROM apps WHERE id = \(appID)").first?.decode(0, as: String.self)
        } catch {
            throw ServiceError.from(error)
        }
    }
}
