import Foundation
import Hummingbird
import LocationGateService

/// What an app's keys may learn about the app and its administration (SPEC §14):
/// `GET /v1/keys` lists the app's live keys (admin), `GET /v1/app` tells any key which app and
/// scope it has, `GET /v1/audit` pages the admin audit trail (admin). None of them answers a
/// key or a hash of one.
struct AdminRoutes {
    let service: GateService

    var collection: RouteCollection<AppRequestContext> {
        let routes = RouteCollection(context: AppRequestContext.self)
        let admin = routes.scoped(.admin)
        admin.get("/v1/keys", use: listKeys)
        admin.get("/v1/audit", use: audit)
        routes.scoped(.anyKey).get("/v1/app", use: app)
        return routes
    }

    /// `{"keys": [{"id", "scope", "deviceBound", "createdAt", "lastUsedAt", "prefix"}]}`, oldest
    /// first; `prefix` is null for a key made before prefixes were kept.
    @Sendable func listKeys(_ request: Request, context: AppRequestContext) async throws -> Response {
        let identity = try context.caller()
        struct Keys: Encodable { var keys: [APIKeys.Listing] }
        return try JSONResponse.make(.ok, Keys(keys: try await service.catalog.listKeys(appID: identity.appID)))
    }

    /// `{"appId", "name", "scope"}`: the app and scope of the calling key, whatever its scope.
    @Sendable func app(_ request: Request, context: AppRequestContext) async throws -> Response {
        let identity = try context.caller()
        guard let name = try await service.catalog.appName(appID: identity.appID) else {
            throw APIError(.notFound, "no such app")
        }
        struct App: Encodable { var appId: String; var name: String; var scope: String }
        return try JSONResponse.make(.ok, App(appId: identity.appID.uuidString.lowercased(), name: name, scope: identity.scope.rawValue))
    }

    /// `{"entries": [...], "next"}`: the trail oldest first after `after` (an entry's id, as
    /// `next` gives it; from the start without it), `limit` entries (100 by default; over 1,000
    /// is a 422 naming `limit`), `next` the `after` of the following page or null at the end.
    /// Ids and `next` are opaque (SPEC §14 "Guard rails"): an `after` that is not an id is a
    /// 400 naming it, one that names no entry of the app's a 422.
    @Sendable func audit(_ request: Request, context: AppRequestContext) async throws -> Response {
        let identity = try context.caller()
        let query = try QueryParameters(of: request)
        var after: UUID?
        if let text = query.get("after") {
            guard let id = UUID(uuidString: text) else {
                throw APIError(.invalidRequest, "after: must be an entry's id, as next gives it")
            }
            after = id
        }
        let limit = try Self.integer(query.get("limit"), "limit") ?? Int64(AdminAuditLog.defaultLimit)
        guard AdminAuditLog.limitRange.contains(Int(clamping: limit)) else {
            throw APIError(.validationFailed, "limit: a whole number from 1 to \(AdminAuditLog.limitRange.upperBound)")
        }
        let page = try await service.adminAudit.entries(appID: identity.appID, after: after, limit: Int(clamping: limit))
        return try JSONResponse.make(.ok, page)
    }

    /// A whole number from the query, nil when absent; anything else is a 400 naming it.
    static func integer(_ text: String?, _ name: String) throws -> Int64? {
        guard let text else { return nil }
        guard let number = Int64(text) else { throw APIError(.invalidRequest, "\(name): must be a whole number") }
        return number
    }
}
