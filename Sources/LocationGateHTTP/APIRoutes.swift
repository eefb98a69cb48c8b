import EventLog
import Foundation
import HTTPTypes
import Hummingbird
import LocationAuthorization
import LocationGateService

/// The v1 API of SPEC §5.
struct APIRoutes {
    let service: GateService
    let rejections = EventRejections()

    func register(on routes: RouteTable) {
        routes.post("/v1/apps", use: createApp)
        routes.post("/v1/keys", use: createKey)
        routes.delete("/v1/keys/:id", use: revokeKey)
        routes.put("/v1/features/:key", use: putFeature)
        routes.get("/v1/features", use: listFeatures)
        routes.get("/v1/features/:key", use: getFeature)
        routes.delete("/v1/features/:key", use: deleteFeature)
        routes.post("/v1/events", use: appendEvents)
        routes.get("/v1/users/:user/devices/:device/gates", use: deviceGates)
        routes.get("/v1/users/:user/devices/:device/gates/:feature", use: deviceGate)
        routes.get("/v1/users/:user/gates", use: userGates)
        routes.post("/v1/gates/query", use: queryGates)
        routes.get("/v1/users/:user/devices/:device/history", use: history)
        routes.get("/v1/users/:user/devices/:device/state", use: state)
        routes.get("/v1/analytics/:kind", use: analytics)
    }

    // MARK: - Analytics

    @Sendable func analytics(_ request: Request, context: AppRequestContext) async throws -> Response {
        let identity = try context.require(.read)
        guard let kind = context.parameters.get("kind").flatMap(AnalyticsQuery.Kind.init(rawValue:)) else {
            throw APIError(.notFound, "analytics are prompts, statuses, escalations or settings")
        }
        let parameters = request.uri.queryParameters
        let query = try (AnalyticsQuery(
                kind: kind, appID: identity.appID,
                groupBy: try AnalyticsQuery.parseGroupBy(parameters.get("groupBy")),
                from: try AnalyticsQuery.parseTime(parameters.get("from"), "from"),
                to: try AnalyticsQuery.parseTime(parameters.get("to"), "to"),
                platform: try AnalyticsQuery.parsePlatform(parameters.get("platform"))))
        let rows = try await service.analytics(query)
        if request.headers[.accept]?.contains("text/csv") == true {
            let csv = AnalyticsFormat.csv(rows, kind: kind, groupBy: query.groupBy)
            return JSONResponse.make(.ok, data: Data(csv.utf8), contentType: "text/csv; charset=utf-8")
        }
        return JSONResponse.make(.ok, data: AnalyticsFormat.json(rows))
    }

    // MARK: - Apps and keys

    @Sendable func createApp(_ request: Request, context: AppRequestContext) async throws -> Response {
        guard context.isAdminToken else {
            if context.identity != nil { throw APIError(.forbidden, "only the admin token creates apps") }
            throw APIError(.unauthorized, "the admin token is required (Authorization: Bearer TOKEN)")
        }
        struct Body: Decodable { var name: String }
        var request = request
        let body = try decode(Body.self, try await request.bodyData(limit: 64 * 1024))
        let created = try await service.apps.create(name: body.name)
        struct Created: Encodable { var appId: String; var name: String; var apiKey: String }
        return try JSONResponse.make(.created, Created(appId: created.appID.uuidString.lowercased(), name: body.name, apiKey: created.apiKey))
    }

    @Sendable func createKey(_ request: Request, context: AppRequestContext) async throws -> Response {
        let identity = try context.require(.admin)
        struct Body: Decodable { var scope: String; var deviceBound: Bool? }
        var request = request
        let body = try decode(Body.self, try await request.bodyData(limit: 64 * 1024))
        guard let scope = KeyScope(rawValue: body.scope) else {
            throw APIError(.validationFailed, "scope: must be ingest, read or admin")
        }
        let deviceBound = body.deviceBound ?? false
        let created = try await service.keys.create(appID: identity.appID, scope: scope, deviceBound: deviceBound)
        struct Created: Encodable {
            var id: String
            var scope: String
            var key: String
            var deviceBound: Bool
            var tokenSecret: String?
        }
        return try JSONResponse.make(
            .created,
            Created(
                id: created.id.uuidString.lowercased(), scope: scope.rawValue, key: created.key, deviceBound: deviceBound,
                tokenSecret: created.tokenSecret))
    }

    @Sendable func revokeKey(_ request: Request, context: AppRequestContext) async throws -> Response {
        let identity = try context.require(.admin)
        guard let id = context.parameters.get("id").flatMap(UUID.init(uuidString:)) else {
            throw APIError(.notFound, "no such key")
        }
        guard try await service.keys.revoke(appID: identity.appID, keyID: id) else {
            throw APIError(.notFound, "no such key")
        }
        return Response(status: .noContent)
    }

    // MARK: - Features

    @Sendable func putFeature(_ request: Request, context: AppRequestContext) async throws -> Response {
        let identity = try context.require(.admin)
        let key = context.parameters.get("key") ?? ""
        var request = request
        let feature: Feature
        do {
            feature = try FeatureCatalog.parseDefinition(key: key, body: try await request.bodyData(limit: 64 * 1024))
        } catch let error as ServiceError {
            throw APIError(error)
        }
        let created = try await service.features.put(appID: identity.appID, feature: feature)
        return try JSONResponse.make(created ? .created : .ok, feature)
    }

    @Sendable func listFeatures(_ request: Request, context: AppRequestContext) async throws -> Response {
        let identity = try context.require(.read)
        struct List: Encodable { var features: [Feature] }
        return try JSONResponse.make(.ok, List(features: try await service.features.features(appID: identity.appID)))
    }

    @Sendable func getFeature(_ request: Request, context: AppRequestContext) async throws -> Response {
        let identity = try context.require(.read)
        let key = context.parameters.get("key") ?? ""
        guard let feature = try await service.features.feature(appID: identity.appID, key: key) else {
            throw APIError(.notFound, "no feature \(key.prefix(128))")
        }
        return try JSONResponse.make(.ok, feature)
    }

    @Sendable func deleteFeature(_ request: Request, context: AppRequestContext) async throws -> Response {
        let identity = try context.require(.admin)
        let key = context.parameters.get("key") ?? ""
        // A key no feature can have is not looked up (nor sent to the database).
        guard (try? ClientText.checkKey(key, field: "key", bytes: 1...64)) != nil,
            try await service.features.delete(appID: identity.appID, key: key)
        else {
            throw APIError(.notFound, "no feature \(key.prefix(128))")
        }
        return Response(status: .noContent)
    }

    // MARK: - Events

    /// Every refusal is counted in `locgate_rejections_total{code}` (`EventRejections`).
    @Sendable func appendEvents(_ request: Request, context: AppRequestContext) async throws -> Response {
        do {
            return try await append(request, context: context)
        } catch {
            rejections.count(error)
            throw error
        }
    }

    private func append(_ request: Request, context: AppRequestContext) async throws -> Response {
        let identity = try context.require(.ingest)
        var request = request
        let body = try await request.bodyData(limit: 1 << 20)
        let submissions = try EventBatch.decode(body, maxEvents: GateService.maxBatchEvents)
        if let secret = identity.tokenSecret {
            try Self.requireDeviceToken(request, secret: secret, covering: submissions)
        }
        let results = try await service.ingest(appID: identity.appID, submissions: submissions)
        // An ingest key is in every copy of the app: its answer says what was stored, not
        // the device's state (which a read key asks for).
        return JSONResponse.make(.ok, data: EventResults(results: results, withState: identity.scope != .ingest).jsonData)
    }

    static let deviceTokenHeader = HTTPField.Name("X-Device-Token")!

    /// A device-bound key's batch needs a valid device token (401 otherwise) that covers
    /// every event's user and device (403 naming the first that it does not). Checked before
    /// anything is stored.
    static func requireDeviceToken(_ request: Request, secret: String, covering submissions: [EventSubmission]) throws {
        guard let text = request.headers[deviceTokenHeader] else {
            throw APIError(.unauthorized, "this ingest key is bound to devices: send X-Device-Token, a token from the app's backend")
        }
        let token: DeviceToken
        do throws(DeviceToken.Refusal) {
            token = try DeviceToken.verify(text, secret: secret)
        } catch {
            throw APIError(.unauthorized, error.description)
        }
        if let index = submissions.firstIndex(where: { !token.covers(userID: $0.userId, deviceID: $0.deviceId) }) {
            throw APIError(
                ServiceError(.forbidden, "events[\(index)]: the device token covers user \(token.userID)\(token.deviceID.map { " on device \($0)" } ?? "") only", index: index))
        }
    }

    // MARK: - Gates

    @Sendable func deviceGates(_ request: Request, context: AppRequestContext) async throws -> Response {
        let identity = try context.require(.read)
        let key = try streamKey(identity, context)
        return try JSONResponse.make(.ok, try await service.deviceGates(key))
    }

    @Sendable func deviceGate(_ request: Request, context: AppRequestContext) async throws -> Response {
        let identity = try context.require(.read)
        let key = try streamKey(identity, context)
        let feature = context.parameters.get("feature") ?? ""
        let decision = try await service.deviceGate(key, feature: feature)
        return JSONResponse.make(.ok, data: decision.jsonData)
    }

    @Sendable func userGates(_ request: Request, context: AppRequestContext) async throws -> Response {
        let identity = try context.require(.read)
        let user = try identifier(context, "user", field: "userId")
        return try JSONResponse.make(.ok, try await service.userGates(appID: identity.appID, userID: user))
    }

    @Sendable func queryGates(_ request: Request, context: AppRequestContext) async throws -> Response {
        let identity = try context.require(.read)
        struct Device: Decodable { var userId: String; var deviceId: String }
        struct Body: Decodable { var devices: [Device]; var features: [String]? }
        var request = request
        let body = try decode(Body.self, try await request.bodyData(limit: 4 << 20))
        guard body.devices.count <= GateService.maxQueryDevices else {
            throw APIError(.tooLarge, "a query holds at most \(GateService.maxQueryDevices) devices")
        }
        for (index, device) in body.devices.enumerated() {
            guard EventSubmission.isValidIdentifier(device.userId), EventSubmission.isValidIdentifier(device.deviceId) else {
                throw APIError(.validationFailed, "devices[\(index)]: userId and deviceId must be \(EventSubmission.identifierRule)", index: index)
            }
        }
        struct Results: Encodable { var results: [DeviceDecisions] }
        let results = try await service.query(appID: identity.appID, devices: body.devices.map { ($0.userId, $0.deviceId) }, featureKeys: body.features)
        return try JSONResponse.make(.ok, Results(results: results))
    }

    // MARK: - Audit

    @Sendable func history(_ request: Request, context: AppRequestContext) async throws -> Response {
        let identity = try context.require(.read)
        let key = try streamKey(identity, context)
        let query = request.uri.queryParameters
        let after = try integer(query.get("afterVersion"), "afterVersion", default: 0, range: 0...Int64.max)
        let limit = try integer(query.get("limit"), "limit", default: 100, range: 1...1000)
        let page = try await service.history(key, afterVersion: after, limit: Int(limit))
        return JSONResponse.make(.ok, data: Data(page.json))
    }

    @Sendable func state(_ request: Request, context: AppRequestContext) async throws -> Response {
        let identity = try context.require(.read)
        let key = try streamKey(identity, context)
        let query = request.uri.queryParameters
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
        return try JSONResponse.make(.ok, try await service.state(key, asOf: asOf, version: version))
    }

    // MARK: - Helpers

    private func streamKey(_ identity: APIIdentity, _ context: AppRequestContext) throws -> StreamKey {
        StreamKey(appID: identity.appID, userID: try identifier(context, "user", field: "userId"),
                  deviceID: try identifier(context, "device", field: "deviceId"))
    }

    private func identifier(_ context: AppRequestContext, _ name: String, field: String) throws -> String {
        // Percent-decoding only when there is something to decode: Foundation's decoder was
        // 5% of a cached gate.
        let raw = context.parameters.get(name) ?? ""
        let value = raw.utf8.contains(UInt8(ascii: "%")) ? raw.removingPercentEncoding ?? "" : raw
        guard EventSubmission.isValidIdentifier(value) else {
            throw APIError(.validationFailed, "\(field): must be \(EventSubmission.identifierRule)")
        }
        return value
    }

    private func integer(_ text: String?, _ name: String, default value: Int64, range: ClosedRange<Int64>) throws -> Int64 {
        guard let text else { return value }
        guard let number = Int64(text), range.contains(number) else {
            throw APIError(.invalidRequest, "\(name): must be an integer from \(range.lowerBound) to \(range.upperBound)")
        }
        return number
    }
}

/// Decodes a small JSON body, with the SPEC's 400 codes.
func decode<Value: Decodable>(_ type: Value.Type, _ data: Data) throws -> Value {
    do {
        return try EventCoding.decode(type, from: data)
    } catch {
        throw APIError(error.kind == .malformedJSON ? .malformedJSON : .invalidRequest, error.message)
    }
}
