import EventLog
import Foundation
import LocationAuthorization
import LocationGateTestSupport
import PostgresClient
import Testing

@testable import LocationGateService

/// The caches' coherence rules and bounds, without a server.
@Suite("Caches: fills never beat invalidations, budgets hold, unknown keys stay away from the database", .timeLimit(.minutes(2)))
struct CacheBoundsTests {
    static let following = CacheCoherence(alwaysFollowing: true)

    static func state(_ authorization: Authorization, appVersion: String? = nil) -> DeviceState {
        var state = DeviceState()
        state.authorization = authorization
        state.context.appVersion = appVersion
        return state
    }

    @Test("A fill that started before an invalidation (or a resync) stores nothing; one after it does")
    func fillVersusInvalidation() {
        let cache = DeviceStateCache(shardCount: 2, coherence: Self.following)
        let key = StreamKey(appID: UUID(), userID: "u", deviceID: "d")
        let early = cache.ticket(key)
        cache.removeIfOlder(key, than: 5)  // another process moved the stream meanwhile
        cache.fill(key, ticket: early, version: 4, state: Self.state(.denied))
        #expect(cache.entry(key) == nil)
        let beforeResync = cache.ticket(key)
        cache.removeAll()
        cache.fill(key, ticket: beforeResync, version: 5, state: Self.state(.denied))
        #expect(cache.entry(key) == nil)
        let fresh = cache.ticket(key)
        cache.fill(key, ticket: fresh, version: 5, state: Self.state(.authorizedAlways))
        #expect(cache.entry(key)?.version == 5)
        // Only forward: an older store changes nothing.
        cache.store(key, version: 3, state: Self.state(.denied), resyncs: cache.resyncCount)
        #expect(cache.entry(key)?.state.authorization == .authorizedAlways)
    }

    @Test("While notifications are not followed the cache neither answers nor stores")
    func notFollowing() async throws {
        // A bound of a second: the store and the read right after the heartbeat fall within it
        // even on a loaded machine; the test then waits for it to pass, as long as that takes.
        let coherence = CacheCoherence(bound: .seconds(1))
        let cache = DeviceStateCache(shardCount: 2, coherence: coherence)
        let key = StreamKey(appID: UUID(), userID: "u", deviceID: "d")
        cache.store(key, version: 1, state: Self.state(.denied), resyncs: cache.resyncCount)
        #expect(cache.count == 0 && cache.entry(key) == nil)
        coherence.markAlive()
        cache.store(key, version: 1, state: Self.state(.denied), resyncs: cache.resyncCount)
        #expect(cache.entry(key)?.version == 1)
        // No heartbeat for longer than the bound: no more answers from memory.
        #expect(try await waitUntil { !coherence.isFollowing })
        #expect(cache.entry(key) == nil)
        coherence.markAlive()
        coherence.markLost()
        #expect(cache.entry(key) == nil)
    }

    @Test("A byte budget holds whatever passes through; recent and hot devices stay")
    func budget() {
        let budget = 256 << 10
        let cache = DeviceStateCache(byteBudget: budget, shardCount: 4, coherence: Self.following)
        let appID = UUID()
        let hot = StreamKey(appID: appID, userID: "hot-user-with-a-long-id", deviceID: "hot-device-with-a-long-id")
        cache.store(hot, version: 1, state: Self.state(.authorizedWhenInUse, appVersion: "hot"), resyncs: cache.resyncCount)
        for index in 0..<50_000 {
            let key = StreamKey(appID: appID, userID: "user-\(index)-with-a-long-identifier", deviceID: "device-\(index)-long-identifier")
            cache.store(key, version: 1, state: Self.state(.denied, appVersion: "build-\(index)"), resyncs: cache.resyncCount)
            if index % 25 == 0 { #expect(cache.entry(hot) != nil) }
            #expect(cache.bytes <= budget)
        }
        #expect(cache.count > 100 && cache.count < 50_000)
        let last = StreamKey(appID: appID, userID: "user-49999-with-a-long-identifier", deviceID: "device-49999-long-identifier")
        #expect(cache.entry(last)?.state.context.appVersion == "build-49999")
        #expect(cache.entry(hot)?.state.context.appVersion == "hot")
        // A budget too small for one entry caches nothing and never traps.
        let tiny = DeviceStateCache(byteBudget: 16, coherence: Self.following)
        tiny.store(hot, version: 1, state: DeviceState(), resyncs: tiny.resyncCount)
        #expect(tiny.count == 0 && tiny.bytes == 0)
    }

    @Test("Unknown keys are remembered: a second lookup, and any text not shaped like a key, never reaches the database")
    func unknownKeys() async throws {
        let pool = try await TestDatabase.pool(size: 1)
        let keys = APIKeys(pool: pool)
        let random = "lg_" + String(repeating: "Z", count: 43)
        #expect(try await keys.identity(forKey: random) == nil)
        await pool.close()
        // The pool is closed: a lookup that reached it would throw.
        #expect(try await keys.identity(forKey: random) == nil)
        #expect(try await keys.identity(forKey: "not-a-key") == nil)
        #expect(try await keys.identity(forKey: "lg_short") == nil)
        keys.invalidateAll()
        await #expect(throws: PostgresError.self) { try await keys.identity(forKey: random) }
    }
}
