import Foundation
import LocationGateTestSupport
import PostgresClient
import Testing
@testable import LocationGateService

/// SPEC §14: a key's `lastUsedAt` is accurate to a minute without a write per request. Uses are
/// noted in memory and written in batches, at most once per interval per key, off the caller.
@Suite("API keys: lastUsedAt written in batches, never once per request", .timeLimit(.minutes(2)))
struct KeyUseTests {
    static func lastUsed(_ keyID: UUID, _ pool: PostgresConnectionPool) async throws -> Date? {
        try await pool.query("SELECT last_used_at FROM api_keys WHERE id = \(keyID)").first?.decodeIfPresent(0, as: Date.self)
    }

    @Test("Hundreds of uses of two keys within a minute cost at most two statements, and none after the first write")
    func usesAreBatched() async throws {
        let pool = try await TestDatabase.pool(size: 2)
        let keys = APIKeys(pool: pool)
        let appID = try await TestDatabase.makeApp(pool)
        let first = try await keys.create(appID: appID, scope: .read, actor: .cli)
        let second = try await keys.create(appID: appID, scope: .ingest, actor: .cli)
        #expect(try await Self.lastUsed(first.id, pool) == nil, "a new key was never used")
        let start = Date()
        for _ in 0..<200 {
            #expect(try await keys.identity(forKey: first.key)?.keyID == first.id)
            #expect(try await keys.identity(forKey: second.key)?.keyID == second.id)
        }
        #expect(try await waitUntil { try await Self.lastUsed(first.id, pool) != nil })
        #expect(try await waitUntil { try await Self.lastUsed(second.id, pool) != nil })
        let used = try #require(try await Self.lastUsed(first.id, pool))
        #expect(abs(used.timeIntervalSince(start)) < 60, "\(used) is not the time of the use")
        #expect(keys.useWrites >= 1 && keys.useWrites <= 2, "\(keys.useWrites) statements for 400 uses")

        let writes = keys.useWrites
        for _ in 0..<100 { _ = keys.cachedIdentity(forKey: first.key) }
        try await Task.sleep(for: .milliseconds(200))
        #expect(keys.useWrites == writes, "a use within the interval was written again")
        await pool.close()
    }

    @Test("Once the interval has passed, the next use is written again; a revoked key is not")
    func laterUsesAreWritten() async throws {
        let pool = try await TestDatabase.pool(size: 2)
        let keys = APIKeys(pool: pool, useInterval: .milliseconds(50))
        let appID = try await TestDatabase.makeApp(pool)
        let key = try await keys.create(appID: appID, scope: .read, actor: .cli)
        _ = try await keys.identity(forKey: key.key)
        let first = try await waitFor("the first use written") { try await Self.lastUsed(key.id, pool) }
        try await Task.sleep(for: .milliseconds(100))
        _ = keys.cachedIdentity(forKey: key.key)
        #expect(try await waitUntil { (try await Self.lastUsed(key.id, pool) ?? first) > first }, "the later use was not written")
        await pool.close()
    }
}

/// The trail's reads as the service answers them (the HTTP tests cover what records it).
@Suite("Admin audit trail: reading", .timeLimit(.minutes(2)))
struct AdminAuditLogTests {
    @Test("entries pages oldest first after an entry's id and refuses a limit outside 1...1000 or another app's id; recentEntries pages newest first")
    func reading() async throws {
        let pool = try await TestDatabase.pool(size: 2)
        let service = GateService(pool: pool, logger: TestDatabase.logger)
        let appID = try await TestDatabase.makeApp(pool)
        var keyIDs: [UUID] = []
        for _ in 0..<5 { keyIDs.append(try await service.keys.create(appID: appID, scope: .read, actor: .cli).id) }

        let all = try await service.adminAudit.entries(appID: appID, after: nil, limit: 100)
        #expect(all.entries.map { $0.target ?? "" } == keyIDs.map(\.lowercasedText))
        #expect(all.entries.allSatisfy { $0.actor == .cli && $0.action == AuditAction.keyCreated.rawValue })
        #expect(all.next == nil)
        let firstTwo = try await service.adminAudit.entries(appID: appID, after: nil, limit: 2)
        #expect(firstTwo.entries == Array(all.entries.prefix(2)) && firstTwo.next == all.entries[1].id)
        let nextTwo = try await service.adminAudit.entries(appID: appID, after: firstTwo.next, limit: 2)
        #expect(nextTwo.entries == Array(all.entries.dropFirst(2).prefix(2)))

        let newest = try await service.adminAudit.recentEntries(appID: appID, before: nil, limit: 3)
        #expect(newest.entries == Array(all.entries.reversed().prefix(3)))
        let older = try await service.adminAudit.recentEntries(appID: appID, before: newest.next, limit: 3)
        #expect(older.entries == Array(all.entries.reversed().dropFirst(3)) && older.next == nil)

        for limit in [0, 1001] {
            do {
                _ = try await service.adminAudit.entries(appID: appID, after: nil, limit: limit)
                Issue.record("limit \(limit) was accepted")
            } catch {
                #expect(error.code == .validationFailed && error.message.hasPrefix("limit"))
            }
        }
        #expect(try await service.adminAudit.entries(appID: UUID(), after: nil, limit: 10).entries.isEmpty)
        // An entry's id is no cursor into another app's trail.
        let otherApp = try await TestDatabase.makeApp(pool)
        do {
            _ = try await service.adminAudit.entries(appID: otherApp, after: all.entries[0].id, limit: 10)
            Issue.record("another app's entry id was taken as a cursor")
        } catch {
            #expect(error.code == .validationFailed && error.message.hasPrefix("after"))
        }
        await pool.close()
    }
}
