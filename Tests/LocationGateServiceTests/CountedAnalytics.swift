@testable import LocationGateService

extension GateService {
    /// The analytics once every append acknowledged before the call is readable.
    ///
    /// A request waits at most two seconds for the transactions in flight at its start, then
    /// counts and answers with what is readable (by design: `AnalyticsRollup.catchUp`). The
    /// global order's horizon is the cluster's oldest running transaction, and in a test run
    /// other tests hold transactions open in their own databases of the same cluster for longer
    /// than that. A test that compares exact counts therefore first waits for them, with a
    /// deadline; the request still does the counting.
    func countedAnalytics(_ query: AnalyticsQuery) async throws -> [AnalyticsQuery.Row] {
        try await AnalyticsRollup(pool: pool, logger: logger).waitForInFlightCommits(patience: .seconds(120))
        return try await analytics(query)
    }
}
