import Foundation
import HTTPTypes
import Hummingbird
import LocationGateService

/// The analytics of SPEC §5 (`/v1/analytics/{kind}`: §6's four and §12's `location-button`), for
/// read and admin keys, as JSON or, asked with `Accept: text/csv`, CSV; from the service's
/// analytics face (`AnalyticsReading`). Mounted under `/v1`.
struct AnalyticsRoutes {
    let analytics: any AnalyticsReading

    var collection: RouteCollection<AppRequestContext> {
        let routes = RouteCollection(context: AppRequestContext.self)
        routes.scoped(.read).get("/analytics/:kind", use: report)
        return routes
    }

    /// The rows as JSON (`AnalyticsFormat.json`) or CSV, written before the answer.
    @Sendable func report(_ request: Request, context: AppRequestContext, caller: APIIdentity) async throws -> PreparedBody {
        guard let kind = context.parameters.get("kind").flatMap(AnalyticsQuery.Kind.init(rawValue:)) else {
            throw APIError(.notFound, "analytics are " + AnalyticsQuery.Kind.names)
        }
        let parameters = try QueryParameters(of: request)
        let query = try AnalyticsQuery.parse(
            kind: kind, appID: caller.appID, groupBy: parameters["groupBy"], from: parameters["from"], to: parameters["to"],
            platform: parameters["platform"])
        let rows = try await analytics.analytics(query)
        if request.headers[.accept]?.contains("text/csv") == true {
            let csv = AnalyticsFormat.csv(rows, kind: kind, groupBy: query.groupBy)
            return PreparedBody(bytes: csv.utf8, contentType: "text/csv; charset=utf-8")
        }
        return PreparedBody(json: AnalyticsFormat.json(rows))
    }
}
