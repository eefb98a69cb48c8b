import Testing

@testable import LocationGateService

extension GateService {
    /// The analytics once every append acknowledged before the call is readable.
    ///
    /// A request waits at most two seconds for the writing transactions in flight at its start,
    /// then counts and answers with what is readable (by design: `AnalyticsRollup.catchUp`).
    /// The global order's horizon is the cluster's oldest running transaction that has written,
    /// and in a test run other tests hold such transactions in their own databases of the same
    /// cluster for longer than that. A test that compares exact counts therefore first waits
    /// for them, with a deadline; the request still does the counting (the tests that call
    /// this have databases of their own, so nothing else holds the rollup's lock).
    func countedAnalytics(_ query: AnalyticsQuery) async throws -> [AnalyticsQuery.Row] {
        let passed = try await AnalyticsRollup(pool: pool, logger: logger).waitForInFlightCommits(patience: .seconds(60))
        #expect(passed, "the cluster's oldest writing transaction did not end within 60 s")
        return try await analytics.analytics(query)
    }
}
