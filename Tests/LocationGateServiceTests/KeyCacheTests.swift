import Foundation
import LocationGateTestSupport
import PostgresClient
import Testing
@testable import LocationGateService

/// The key cache forgets only what changed: creating keys never empties it (a tenant could
/// otherwise flush every process's cache in a loop), and a revocation forgets that key alone.
@Suite("API keys: targeted invalidation", .timeLimit(.minutes(2)))
struct KeyCacheTests {
    /// Marks a key revoked behind the cache's back (no notification): a lookup that still
    /// answers proves the answer came from the cache.
    static func revokeSilently(_ keyID: UUID, _ pool: PostgresConnectionPool) async throws {
        try await pool.query("UPDATE api_keys SET revoked_at = now() WHERE id = \(keyID)")
    }

    @Test("Creating keys in a loop leaves every cached key cached")
    func creationKeepsTheCache() async throws {
        let pool = try await TestDatabase.pool(size: 2)
        let keys = APIKeys(pool: pool)
        let appID = try await TestDatabase.makeApp(pool)
        let cached = try await keys.create(appID: appID, scope: .read, actor: .cli)
        #expect(try await keys.identity(forKey: cached.key)?.keyID == cached.id)
        for _ in 0..<50 { _ = try await keys.create(appID: appID, scope: .ingest, actor: .cli) }
        try await Self.revokeSilently(cached.id, pool)
        #expect(try await keys.identity(forKey: cached.key)?.keyID == cached.id, "the cache was emptied by key creation")
        await pool.close()
    }

    @Test("A revocation forgets the revoked key at once and no other")
    func revocationIsTargeted() async throws {
        let pool = try await TestDatabase.pool(size: 2)
        let keys = APIKeys(pool: pool)
        let appID = try await TestDatabase.makeApp(pool)
        let kept = try await keys.create(appID: appID, scope: .read, actor: .cli)
        let revoked = try await keys.create(appID: appID, scope: .read, actor: .cli)
        #expect(try await keys.identity(forKey: kept.key) != nil)
        #expect(try await keys.identity(forKey: revoked.key) != nil)
        #expect(try await keys.revoke(appID: appID, keyID: revoked.id, actor: .cli))
        #expect(try await keys.identity(forKey: revoked.key) == nil)
        try await Self.revokeSilently(kept.id, pool)
        #expect(try await keys.identity(forKey: kept.key) != nil, "revoking one key forgot another")
        #expect(try await keys.revoke(appID: appID, keyID: revoked.id, actor: .cli) == false, "a second revocation finds no live key")
        await pool.close()
    }
}
