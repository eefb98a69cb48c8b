import Foundation
import Hummingbird
import LocationGateService

/// Retention (SPEC §13): `PUT /v1/apps/{appId}/retention` `{"days": N}` sets how many days the
/// app's events are kept (1 to 36500; null keeps everything, the default), `GET` answers
/// `{"days", "lastRun"}`, `lastRun` being the app's last run (`{"at", "cut", "events",
/// "devices"}`, one that erased nothing included; null before the first). Both take that app's
/// admin key; any other app's id is 404, as an unknown one. Mounted under `/v1`.
struct RetentionRoutes {
    let service: any RetentionService

    var collection: RouteCollection<AppRequestContext> {
        let routes = RouteCollection(context: AppRequestContext.self)
        let admin = routes.scoped(.admin)
        admin.get("/apps/:appId/retention", use: show)
        admin.put("/apps/:appId/retention", use: set)
        return routes
    }

    /// The answer: `days` is written as null when everything is kept.
    struct Retention: ResponseEncodable {
        var days: Int?

        func encode(to encoder: any Encoder) throws {
            enum Keys: String, CodingKey { case days }
            var container = encoder.container(keyedBy: Keys.self)
            try container.encode(days, forKey: .days)
        }
    }

    /// The answer to GET: the setting and the last run, both written as null when unset.
    struct Shown: ResponseEncodable {
        var days: Int?
        var lastRun: LocationGateService.Retention.LastRun?

        func encode(to encoder: any Encoder) throws {
            enum Keys: String, CodingKey { case days, lastRun }
            var container = encoder.container(keyedBy: Keys.self)
            try container.encode(days, forKey: .days)
            try container.encode(lastRun, forKey: .lastRun)
        }
    }

    /// The request body: `days` must be present, a whole number or null.
    struct Body: Decodable {
        enum Days { case missing, invalid, keepEverything, days(Int) }
        var days: Days

        init(from decoder: any Decoder) throws {
            enum Keys: String, CodingKey { case days }
            let container = try decoder.container(keyedBy: Keys.self)
            if !container.contains(.days) {
                days = .missing
            } else if try container.decodeNil(forKey: .days) {
                days = .keepEverything
            } else if let value = try? container.decode(Int.self, forKey: .days) {
                days = .days(value)
            } else {
                days = .invalid
            }
        }
    }

    @Sendable func show(_ request: Request, context: AppRequestContext, caller: APIIdentity) async throws -> Shown {
        let appID = try appID(context, caller)
        let days = try await service.retentionDays(appID: appID)
        return Shown(days: days, lastRun: try await service.lastRetentionRun(appID: appID))
    }

    @Sendable func set(_ request: Request, context: AppRequestContext, caller: APIIdentity) async throws -> Retention {
        let appID = try appID(context, caller)
        let keyID = caller.keyID
        var request = request
        let body = try ConfigurationBody.decode(Body.self, from: try await request.bodyData(limit: 4 * 1024), shape: ConfigurationBody.retention)
        let days: Int?
        switch body.days {
        case .days(let value) where RetentionCapability.retentionRange.contains(value): days = value
        case .keepEverything: days = nil
        case .missing, .invalid, .days:
            throw APIError(.validationFailed, "days: a whole number of days from 1 to 36500, or null to keep everything")
        }
        try await service.setRetentionDays(appID: appID, days: days, actor: .key(keyID))
        return Retention(days: days)
    }

    /// The path's app, when it is the admin key's own.
    func appID(_ context: AppRequestContext, _ caller: APIIdentity) throws -> UUID {
        guard let appID = context.parameters.get("appId").flatMap(UUID.init(uuidString:)), appID == caller.appID else {
            throw APIError(.notFound, "no such app")
        }
        return appID
    }
}
