import EventLog
import Foundation
import Hummingbird
import LocationAuthorization
import LocationGateService

/// Gates (SPEC §5), for read and admin keys: one device's decisions, one feature's, a user's,
/// and many devices at once, from the service's gates face (`GateReading`). A feature the app
/// does not have is 404. Mounted under `/v1`.
struct GateRoutes {
    let gates: any GateReading

    var collection: RouteCollection<AppRequestContext> {
        let routes = RouteCollection(context: AppRequestContext.self)
        let read = routes.scoped(.read)
        read.get("/users/:user/devices/:device/gates", use: deviceGates)
        read.get("/users/:user/devices/:device/gates/:feature", use: deviceGate)
        read.get("/users/:user/gates", use: userGates)
        read.post("/gates/query", use: queryGates)
        return routes
    }

    @Sendable func deviceGates(_ request: Request, context: AppRequestContext, caller: APIIdentity) async throws -> DeviceGates {
        try await gates.deviceGates(try PathParameters.streamKey(caller, context))
    }

    /// The hot path: the decision's JSON as `JSONWriter` wrote it once (`GateDecision.json`).
    @Sendable func deviceGate(_ request: Request, context: AppRequestContext, caller: APIIdentity) async throws -> PreparedBody {
        let key = try PathParameters.streamKey(caller, context)
        let feature = context.parameters.get("feature") ?? ""
        let decision: GateDecision
        if let cached = try gates.cachedDeviceGate(key, feature: feature) {
            decision = cached
        } else {
            decision = try await gates.deviceGate(key, feature: feature)
        }
        return PreparedBody(json: decision.json)
    }

    @Sendable func userGates(_ request: Request, context: AppRequestContext, caller: APIIdentity) async throws -> UserGates {
        let user = try PathParameters.identifier(context, "user", field: "userId")
        return try await gates.userGates(appID: caller.appID, userID: user)
    }

    @Sendable func queryGates(_ request: Request, context: AppRequestContext, caller: APIIdentity) async throws -> GateQueryResults {
        struct Device: Decodable { var userId: String; var deviceId: String }
        struct Body: Decodable { var devices: [Device]; var features: [String]? }
        var request = request
        let body = try ConfigurationBody.decode(Body.self, from: try await request.bodyData(limit: 4 << 20), shape: ConfigurationBody.gateQuery)
        guard body.devices.count <= GatesCapability.maxQueryDevices else {
            throw APIError(.tooLarge, "a query holds at most \(GatesCapability.maxQueryDevices) devices")
        }
        for (index, device) in body.devices.enumerated() {
            guard EventSubmission.isValidIdentifier(device.userId), EventSubmission.isValidIdentifier(device.deviceId) else {
                throw APIError(.validationFailed, "devices[\(index)]: userId and deviceId must be \(EventSubmission.identifierRule)", index: index)
            }
        }
        let results = try await gates.query(appID: caller.appID, devices: body.devices.map { ($0.userId, $0.deviceId) }, featureKeys: body.features)
        return GateQueryResults(results: results)
    }
}

/// `POST /v1/gates/query`'s answer: `{"results": [...]}`, a device's decisions each.
struct GateQueryResults: ResponseEncodable {
    var results: [DeviceDecisions]
}
