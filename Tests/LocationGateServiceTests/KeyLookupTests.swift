import Foundation
import LocationGateTestSupport
import PostgresClient
import Testing
@testable import LocationGateService

/// What invalid keys cost the database (SPEC §5 "Resources"): text not shaped like a key costs
/// nothing, an unknown key one probe and then nothing while it is remembered, and look-ups
/// however many are batched into a bounded number of statements, a valid key among them
/// answered like the rest.
@Suite("API keys: the database work of invalid keys is bounded", .timeLimit(.minutes(2)))
struct KeyLookupTests {
    @Test("Text not shaped like a key reaches no statement; an unknown key costs one, and while remembered no more")
    func malformedAndRemembered() async throws {
        let pool = try await TestDatabase.pool(size: 2)
        let keys = APIKeys(pool: pool)
        for text in [
            "", "lg_", "lg_short", "lg_" + String(repeating: "!", count: 43), String(repeating: "a", count: 46),
            "lg_" + String(repeating: "a", count: 44), "LG_" + String(repeating: "a", count: 43),
        ] {
            #expect(try await keys.identity(forKey: text) == nil)
        }
        #expect(keys.lookups.cost.statements == 0, "malformed text reached the database")
        let unknown = "lg_" + String(repeating: "u", count: 43)
        #expect(try await keys.identity(forKey: unknown) == nil)
        #expect(keys.lookups.cost.statements == 1 && keys.lookups.cost.keys == 1)
        for _ in 0..<20 { #expect(try await keys.identity(forKey: unknown) == nil) }
        #expect(keys.lookups.cost.statements == 1, "a remembered unknown key was looked up again")
        await pool.close()
    }

    @Test("301 concurrent look-ups (300 invalid keys, one valid) behind a held statement: they wait for the key look-ups' own slot, not the pool, and go as one batch; the valid key is found")
    func batchedAndBounded() async throws {
        let pool = try await TestDatabase.privatePool(prefix: "locgate_keys", size: 3)
        let keys = APIKeys(pool: pool, maxConcurrentLookups: 1)
        let appID = try await TestDatabase.makeApp(pool)
        let valid = try await keys.create(appID: appID, scope: .read, actor: .cli)

        // A transaction holds api_keys: the first look-up's statement waits for it, and every
        // other look-up queues behind that statement.
        let locked = TestLatch(), release = TestLatch()
        let holder = Task {
            try await pool.withConnection { connection in
                try connection.transaction { connection in
                    try connection.query("LOCK TABLE api_keys IN ACCESS EXCLUSIVE MODE")
                    locked.raise()
                    release.block(atMost: .seconds(60))
                }
            }
        }
        #expect(try await waitUntil(timeout: .seconds(30)) { locked.isRaised })
        let texts = (0..<300).map { "lg_" + String(format: "%043d", $0) } + [valid.key]
        let lookups = Task {
            try await withThrowingTaskGroup(of: (String, UUID?).self, returning: (Int, [String: UUID]).self) { group in
                for text in texts {
                    group.addTask {
                        let identity = try await keys.identity(forKey: text)
                        return (text, identity?.keyID)
                    }
                }
                var answered = 0
                var found: [String: UUID] = [:]
                for try await (text, keyID) in group {
                    answered += 1
                    if let keyID { found[text] = keyID }
                }
                return (answered, found)
            }
        }
        #expect(try await waitUntil(timeout: .seconds(30)) { keys.lookups.waiting == 300 }, "\(keys.lookups.waiting) waiting")
        #expect(pool.waiting == 0, "look-ups wait for their own slot, not in the pool's queue")
        release.raise()
        try await holder.value
        let (answered, found) = try await lookups.value
        #expect(answered == 301)
        #expect(found == [valid.key: valid.id], "only the valid key is found, and it is")
        let cost = keys.lookups.cost
        #expect(cost.mostInFlight == 1, "more statements than allowed ran at once")
        #expect(cost.statements == 2 && cost.keys == 301, "\(cost)")
        await pool.close()
    }
}
