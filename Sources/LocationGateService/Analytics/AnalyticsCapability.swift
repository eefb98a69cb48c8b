import Foundation
import Logging
import PostgresClient

/// The analytics (SPEC §6, §8, §12): the queries over the rollups, each after counting whatever
/// the log holds that they have not counted yet, and the features' coverage
/// (`DashboardQueries.swift`). The queries are costly work (`CostlyWork`); the coverage reads
/// one row per distinct state, a page at a time. The HTTP layer sees it as `AnalyticsReading`.
public final class AnalyticsCapability: Sendable, DatabaseCalls {
    let pool: PostgresConnectionPool
    let reads: StandbyReads
    let features: FeatureCatalog
    /// Decoded states of `device_state_kinds`, shared with the catalog's previews.
    let stateKinds: StateKindCache
    let costly: CostlyWork
    let logger: Logger

    init(pool: PostgresConnectionPool, reads: StandbyReads, features: FeatureCatalog, stateKinds: StateKindCache, costly: CostlyWork, logger: Logger) {
        self.pool = pool
        self.reads = reads
        self.features = features
        self.stateKinds = stateKinds
        self.costly = costly
        self.logger = logger
    }

    /// Runs an analytics query after counting whatever the log holds that the rollups have not
    /// counted yet, so an acknowledged append is always in the figures.
    public func analytics(_ query: AnalyticsQuery) async throws(ServiceError) -> [AnalyticsQuery.Row] {
        try await analytics([query])[0]
    }

    /// Several queries of one app (a dashboard page's charts) as one costly request: one count
    /// of what the rollups have not counted yet, then each query in turn on one connection, so
    /// that a page of three charts costs one catch-up, not three, and its figures agree.
    public func analytics(_ queries: [AnalyticsQuery]) async throws(ServiceError) -> [[AnalyticsQuery.Row]] {
        guard let appID = queries.first?.appID else { return [] }
        guard queries.allSatisfy({ $0.appID == appID }) else {
            throw ServiceError(.internalError, "one request's analytics queries are of one app")
        }
        return try await database {
            // Costly work: at most two per app at once, within the costly requests' share of the pool.
            try await costly.run(.analytics, appID: appID) {
                try await AnalyticsRollup(pool: pool, logger: logger).catchUp(waitForInFlightCommits: true)
                return try await reads.caughtUp().withConnection { connection in try queries.map { try $0.run(on: connection) } }
            }
        }
    }
}
