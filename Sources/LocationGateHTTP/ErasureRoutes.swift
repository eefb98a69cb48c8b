import Foundation
import HTTPTypes
import Hummingbird
import LocationAuthorization
import LocationGateService

/// Erasure (SPEC §13): `DELETE /v1/users/{u}` starts one, `GET /v1/erasures/{id}` follows it.
/// Both take the app's admin key. Logs and metrics name the route template, never the ids. An
/// app with too many erasures pending gets 429 `rateLimited` with Retry-After.
struct ErasureRoutes {
    let service: GateService

    func register(on routes: RouteTable) {
        routes.delete("/v1/users/:user", use: erase)
        routes.get("/v1/erasures/:id", use: status)
    }

    /// Seconds a request refused because the app has too many erasures pending is told to wait.
    static let retryAfterWhenFull = 5

    struct Accepted: Encodable {
        var id: String
        var status: String
    }

    /// 202 with the erasure's id once its record exists; an unknown user gets the same answer,
    /// so that an erasure never tells who exists.
    @Sendable func erase(_ request: Request, context: AppRequestContext) async throws -> Response {
        let identity = try context.require(.admin)
        let user = context.parameters.get("user") ?? ""
        guard EventSubmission.isValidIdentifier(user) else {
            throw APIError(.validationFailed, "userId: 1 to 128 characters of A-Z a-z 0-9 . _ : @ -")
        }
        let record: ErasureRecord
        do {
            record = try await service.requestErasure(appID: identity.appID, userID: user)
        } catch {
            // The app's pending erasures are at their bound: worth asking again once some are done.
            guard error.code == .rateLimited else { throw error }
            throw APIError(error, retryAfter: Self.retryAfterWhenFull)
        }
        return try JSONResponse.make(.accepted, Accepted(id: record.id.uuidString.lowercased(), status: record.status))
    }

    /// The erasure's record; 404 for any key but this app's admin key, as for an unknown id.
    @Sendable func status(_ request: Request, context: AppRequestContext) async throws -> Response {
        let identity: APIIdentity
        do {
            identity = try context.require(.admin)
        } catch let error as APIError where error.error.code == .forbidden {
            throw APIError(.notFound, "no such erasure")
        }
        guard let id = context.parameters.get("id").flatMap(UUID.init(uuidString:)),
              let record = try await service.erasure(appID: identity.appID, id: id)
        else { throw APIError(.notFound, "no such erasure") }
        return try JSONResponse.make(.ok, record)
    }
}
