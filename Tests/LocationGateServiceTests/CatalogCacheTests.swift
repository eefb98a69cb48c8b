import Foundation
import LocationAuthorization
import LocationGateTestSupport
import PostgresClient
import Testing

@testable import LocationGateService

/// `FeatureCatalog.cachedFeatures(appID:)`, the gate's answer from memory without awaiting,
/// against a real database: it holds what `features(appID:)` loaded, nothing before, nothing
/// after a change, and nothing while notifications are not followed.
@Suite("Feature catalog: the memory answer follows the cache's rules", .timeLimit(.minutes(2)))
struct CatalogCacheTests {
    @Test("Nil until a load, the loaded catalog after, nil after a change or without notifications")
    func cachedFeatures() async throws {
        let configuration = try await TestDatabase.create(prefix: "locgate_catalogcache")
        let pool = PostgresConnectionPool(configuration: configuration, size: 2, logger: TestDatabase.logger)
        let appID = try await TestDatabase.makeApp(pool)
        let catalog = FeatureCatalog(pool: pool, coherence: CacheCoherence(alwaysFollowing: true))
        let nearby = Feature(key: "nearby", requires: .whenInUse, services: [.standard])
        _ = try await catalog.put(appID: appID, feature: nearby, actor: .cli)
        #expect(catalog.cachedFeatures(appID: appID) == nil)
        let loaded = try await catalog.features(appID: appID)
        #expect(loaded.map(\.key) == ["nearby"])
        #expect(catalog.cachedFeatures(appID: appID)?.map(\.key) == ["nearby"])
        // A change drops it; the next load has the change.
        let trips = Feature(key: "trip-log", requires: .always, services: [.visits])
        _ = try await catalog.put(appID: appID, feature: trips, actor: .cli)
        #expect(catalog.cachedFeatures(appID: appID) == nil)
        #expect(try await catalog.features(appID: appID).map(\.key) == ["nearby", "trip-log"])
        #expect(catalog.cachedFeatures(appID: appID)?.map(\.key) == ["nearby", "trip-log"])
        // A process that does not follow notifications (no heartbeat yet) loads, keeps nothing
        // and answers nothing from memory.
        let unfollowed = FeatureCatalog(pool: pool, coherence: CacheCoherence(bound: .seconds(1)))
        #expect(try await unfollowed.features(appID: appID).map(\.key) == ["nearby", "trip-log"])
        #expect(unfollowed.cachedFeatures(appID: appID) == nil)
        await pool.close()
    }
}
