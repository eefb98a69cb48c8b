@testable import LocationGateService

extension GateService {
    /// The analytics once every append acknowledged before the call is counted.
    ///
    /// A request waits at most two seconds for the transactions in flight at its start, then
    /// answers with what is counted (by design: `AnalyticsRollup.catchUp`). The global order's
    /// horizon is the cluster's oldest running transaction, and in a test run other tests hold
    /// transactions open in their own databases of the same cluster for longer than that. A test
    /// that compares exact counts therefore waits for them first, with a deadline.
    func countedAnalytics(_ query: AnalyticsQuery) async throws -> [AnalyticsQuery.Row] {
        try await AnalyticsRollup(pool: pool, logger: logger).catchUp(waitForInFlightCommits: true, patience: .seconds(120))
        return try await analytics(query)
    }
}
