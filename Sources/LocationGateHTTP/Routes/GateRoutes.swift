import EventLog
import Foundation
import Hummingbird
import LocationAuthorization
import LocationGateService

/// Gates (SPEC §5), for read and admin keys: one device's decisions, one feature's, a user's,
/// and many devices at once, from the service's gates face (`GateReading`). A feature the app
/// does not have is 404.
struct GateRoutes {
    let gates: any GateReading

    var collection: RouteCollection<AppRequestContext> {
        let routes = RouteCollection(context: AppRequestContext.self)
        let read = routes.scoped(.read)
        read.get("/v1/users/:user/devices/:device/gates", use: deviceGates)
        read.get("/v1/users/:user/devices/:device/gates/:feature", use: deviceGate)
        read.get("/v1/users/:user/gates", use: userGates)
        read.post("/v1/gates/query", use: queryGates)
        return routes
    }

    @Sendable func deviceGates(_ request: Request, context: AppRequestContext) async throws -> Response {
        let identity = try context.caller()
        let key = try PathParameters.streamKey(identity, context)
        return try JSONResponse.make(.ok, try await gates.deviceGates(key))
    }

    @Sendable func deviceGate(_ request: Request, context: AppRequestContext) async throws -> Response {
        let identity = try context.caller()
        let key = try PathParameters.streamKey(identity, context)
        let feature = context.pathParameter("feature") ?? ""
        let decision: GateDecision
        if let cached = try gates.cachedDeviceGate(key, feature: feature) {
            decision = cached
        } else {
            decision = try await gates.deviceGate(key, feature: feature)
        }
        return JSONResponse.make(.ok, data: decision.json)
    }

    @Sendable func userGates(_ request: Request, context: AppRequestContext) async throws -> Response {
        let identity = try context.caller()
        let user = try PathParameters.identifier(context, "user", field: "userId")
        return try JSONResponse.make(.ok, try await gates.userGates(appID: identity.appID, userID: user))
    }

    @Sendable func queryGates(_ request: Request, context: AppRequestContext) async throws -> Response {
        let identity = try context.caller()
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
        struct Results: Encodable { var results: [DeviceDecisions] }
        let results = try await gates.query(appID: identity.appID, devices: body.devices.map { ($0.userId, $0.deviceId) }, featureKeys: body.features)
        return try JSONResponse.make(.ok, Results(results: results))
    }
}
