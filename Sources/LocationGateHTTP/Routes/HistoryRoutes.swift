import EventLog
import Foundation
import Hummingbird
import LocationAuthorization
import LocationGateService

/// A device's history and its state as of a time or a version (SPEC §5), for read and admin
/// keys, from the service's audit face (`HistoryReading`). Mounted under `/v1`.
struct HistoryRoutes {
    let history: any HistoryReading

    var collection: RouteCollection<AppRequestContext> {
        let routes = RouteCollection(context: AppRequestContext.self)
        let read = routes.scoped(.read)
        read.get("/users/:user/devices/:device/history", use: historyPage)
        read.get("/users/:user/devices/:device/state", use: state)
        return routes
    }

    /// A page of the history, its JSON as `JSONWriter` wrote it (`HistoryPage.json`).
    @Sendable func historyPage(_ request: Request, context: AppRequestContext, caller: APIIdentity) async throws -> PreparedBody {
        let key = try PathParameters.streamKey(caller, context)
        let query = try QueryParameters(of: request)
        let after = try integer(query.get("afterVersion"), "afterVersion", default: 0, range: 0...Int64.max)
        let limit = try integer(query.get("limit"), "limit", default: 100, range: 1...1000)
        let page = try await history.history(key, afterVersion: after, limit: Int(limit))
        return PreparedBody(json: page.json)
    }

    @Sendable func state(_ request: Request, context: AppRequestContext, caller: APIIdentity) async throws -> StateView {
        let key = try PathParameters.streamKey(caller, context)
        let query = try QueryParameters(of: request)
        let asOfText = query.get("asOf")
        let versionText = query.get("version")
        if asOfText != nil && versionText != nil {
            throw APIError(.invalidRequest, "give asOf or version, not both")
        }
        var asOf: Date?
        if let asOfText {
            guard let date = RFC3339.date(from: asOfText) else { throw APIError(.invalidRequest, "asOf: not an RFC 3339 time") }
            guard RFC3339.acceptedRange.contains(date) else {
                throw APIError(.validationFailed, "asOf: \(RFC3339.rangeMessage)")
            }
            asOf = date
        }
        let version = try versionText.map { try integer($0, "version", default: 0, range: 0...Int64.max) }
        return try await history.state(key, asOf: asOf, version: version)
    }

    private func integer(_ text: String?, _ name: String, default value: Int64, range: ClosedRange<Int64>) throws -> Int64 {
        guard let text else { return value }
        guard let number = Int64(text), range.contains(number) else {
            throw APIError(.invalidRequest, "\(name): must be an integer from \(range.lowerBound) to \(range.upperBound)")
        }
        return number
    }
}
