import Foundation
import Hummingbird
import LocationGateService

/// What an app's keys may learn about the app and its administration (SPEC §14):
/// `GET /v1/keys` lists the app's live keys (admin), `GET /v1/app` tells any key which app and
/// scope it has, `GET /v1/audit` pages the admin audit trail (admin). None of them answers a
/// key or a hash of one. From the service's catalog face (`CatalogService`) and its admin
/// audit trail (`AdminAuditLog`). Mounted under `/v1`.
struct AdminRoutes {
    let catalog: any CatalogService
    let adminAudit: AdminAuditLog

    var collection: RouteCollection<AppRequestContext> {
        let routes = RouteCollection(context: AppRequestContext.self)
        let admin = routes.scoped(.admin)
        admin.get("/keys", use: listKeys)
        admin.get("/audit", use: audit)
        routes.scoped(.anyKey).get("/app", use: app)
        return routes
    }

    /// `GET /v1/keys`'s answer: `{"keys": [...]}`, the app's live keys.
    struct KeyList: ResponseEncodable {
        var keys: [APIKeys.Listing]
    }

    /// `GET /v1/app`'s answer: the calling key's app and scope.
    struct CallerApp: ResponseEncodable {
        var appId: String
        var name: String
        var scope: String
    }

    /// `{"keys": [{"id", "scope", "deviceBound", "createdAt", "lastUsedAt", "prefix"}]}`, oldest
    /// first; `prefix` is null for a key made before prefixes were kept.
    @Sendable func listKeys(_ request: Request, context: AppRequestContext, caller: APIIdentity) async throws -> KeyList {
        KeyList(keys: try await catalog.listKeys(appID: caller.appID))
    }

    /// `{"appId", "name", "scope"}`: the app and scope of the calling key, whatever its scope.
    @Sendable func app(_ request: Request, context: AppRequestContext, caller: APIIdentity) async throws -> CallerApp {
        guard let name = try await catalog.appName(appID: caller.appID) else {
            throw APIError(.notFound, "no such app")
        }
        return CallerApp(appId: caller.appID.uuidString.lowercased(), name: name, scope: caller.scope.rawValue)
    }

    /// `{"entries": [...], "next"}`: the trail oldest first after `after` (an entry's id, as
    /// `next` gives it; from the start without it), `limit` entries (100 by default; over 1,000
    /// is a 422 naming `limit`), `next` the `after` of the following page or null at the end.
    /// Ids and `next` are opaque (SPEC §14 "Guard rails"): an `after` that is not an id is a
    /// 400 naming it, one that names no entry of the app's a 422.
    @Sendable func audit(_ request: Request, context: AppRequestContext, caller: APIIdentity) async throws -> AuditPage {
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
        return try await adminAudit.entries(appID: caller.appID, after: after, limit: Int(clamping: limit))
    }

    /// A whole number from the query, nil when absent; anything else is a 400 naming it.
    static func integer(_ text: String?, _ name: String) throws -> Int64? {
        guard let text else { return nil }
        guard let number = Int64(text) else { throw APIError(.invalidRequest, "\(name): must be a whole number") }
        return number
    }
}
