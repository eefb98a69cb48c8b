import Foundation
import HTTPTypes
import Hummingbird
import LocationAuthorization
import LocationGateService

/// Erasure (SPEC §13): `DELETE /v1/users/{u}` starts one of a person, `DELETE
/// /v1/users/{u}/devices/{d}` one of a single device of theirs, `GET /v1/erasures/{id}` follows
/// either. All take the app's admin key. Logs and metrics name the route template, never the
/// ids. An app with too many erasures pending gets 429 `rateLimited` with Retry-After.
/// Mounted under `/v1`.
struct ErasureRoutes {
    let service: any ErasureService

    var collection: RouteCollection<AppRequestContext> {
        let routes = RouteCollection(context: AppRequestContext.self)
        let admin = routes.scoped(.admin)
        admin.delete("/users/:user", use: erase)
        admin.delete("/users/:user/devices/:device", use: eraseDevice)
        // An erasure's record is 404 to any key but this app's admin key, as an unknown id.
        routes.scoped(.admin(otherwise: APIError(.notFound, "no such erasure"))).get("/erasures/:id", use: status)
        return routes
    }

    /// Seconds a request refused because the app has too many erasures pending is told to wait.
    static let retryAfterWhenFull = 5

    /// The answer to an erasure's request (202): its id, to follow it with, and its status.
    struct Accepted: ResponseEncodable {
        var id: String
        var status: String
    }

    /// 202 with the erasure's id once its record exists; an unknown user gets the same answer,
    /// so that an erasure never tells who exists.
    @Sendable func erase(_ request: Request, context: AppRequestContext, caller: APIIdentity) async throws -> EditedResponse<Accepted> {
        let user = context.parameters.get("user") ?? ""
        guard EventSubmission.isValidIdentifier(user) else {
            throw APIError(.validationFailed, "userId: \(EventSubmission.identifierRule)")
        }
        let record: ErasureRecord
        do {
            record = try await service.requestErasure(appID: caller.appID, userID: user, actor: .key(caller.keyID))
        } catch {
            // The app's pending erasures are at their bound: worth asking again once some are done.
            guard error.code == .rateLimited else { throw error }
            throw APIError(error, retryAfter: Self.retryAfterWhenFull)
        }
        return EditedResponse(status: .accepted, response: Accepted(id: record.id.uuidString.lowercased(), status: record.status))
    }

    /// One device of a person: the same answers as a person's erasure (202 once the record
    /// exists, the same for an unknown device; 403, 422, 429); the person's other devices stay.
    @Sendable func eraseDevice(_ request: Request, context: AppRequestContext, caller: APIIdentity) async throws -> EditedResponse<Accepted> {
        let user = try PathParameters.identifier(context, "user", field: "userId")
        let device = try PathParameters.identifier(context, "device", field: "deviceId")
        let record: ErasureRecord
        do {
            record = try await service.requestDeviceErasure(
                appID: caller.appID, userID: user, deviceID: device, actor: .key(caller.keyID))
        } catch {
            guard error.code == .rateLimited else { throw error }
            throw APIError(error, retryAfter: Self.retryAfterWhenFull)
        }
        return EditedResponse(status: .accepted, response: Accepted(id: record.id.uuidString.lowercased(), status: record.status))
    }

    /// The erasure's record; 404 for any key but this app's admin key, as for an unknown id.
    @Sendable func status(_ request: Request, context: AppRequestContext, caller: APIIdentity) async throws -> ErasureRecord {
        guard let id = context.parameters.get("id").flatMap(UUID.init(uuidString:)),
              let record = try await service.erasure(appID: caller.appID, id: id)
        else { throw APIError(.notFound, "no such erasure") }
        return record
    }
}
