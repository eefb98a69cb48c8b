/// The analytics face of the service: the queries of SPEC §5 (§6's four and §12's location
/// button's) over the rollups, after counting whatever the log holds that they have not counted
/// yet.
public protocol AnalyticsReading: Sendable {
    func analytics(_ query: AnalyticsQuery) async throws(ServiceError) -> [AnalyticsQuery.Row]
}

extension AnalyticsCapability: AnalyticsReading {}
