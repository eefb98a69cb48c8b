/// The analytics face of the service: the four queries of SPEC §5 over the rollups, after
/// counting whatever the log holds that they have not counted yet.
public protocol AnalyticsReading: Sendable {
    func analytics(_ query: AnalyticsQuery) async throws(ServiceError) -> [AnalyticsQuery.Row]
}

extension GateService: AnalyticsReading {}
