import Foundation
import HTTPTypes
import Hummingbird
import LocationAuthorization
import LocationGateJSON
import LocationGateService

/// Apps, keys and features (SPEC §4, §5), from the service's catalog face (`CatalogService`):
/// `POST /v1/apps` takes the configuration's admin token alone; keys and changes to features
/// take an admin key; reading features a read or admin key. Every change is recorded in the
/// admin audit trail with the key that made it (or the admin token). Mounted under `/v1`.
struct CatalogRoutes {
    let catalog: any CatalogService

    var collection: RouteCollection<AppRequestContext> {
        let routes = RouteCollection(context: AppRequestContext.self)
        let adminToken = routes.adminTokenOnly()
        let admin = routes.scoped(.admin)
        let read = routes.scoped(.read)
        adminToken.post("/apps", use: createApp)
        admin.post("/keys", use: createKey)
        admin.delete("/keys/:id", use: revokeKey)
        admin.put("/features/:key", use: putFeature)
        admin.patch("/features/:key", use: patchFeature)
        read.get("/features", use: listFeatures)
        read.get("/features/:key", use: getFeature)
        admin.delete("/features/:key", use: deleteFeature)
        admin.post("/features/:key/preview", use: previewFeature)
        return routes
    }

    /// `POST /v1/apps`'s answer (201): the app and its first key, an admin key.
    struct CreatedApp: ResponseEncodable {
        var appId: String
        var name: String
        var apiKey: String
        var keyId: String
    }

    /// `POST /v1/keys`'s answer (201): the key, answered this once, and a device-bound key's
    /// token secret.
    struct CreatedKey: ResponseEncodable {
        var id: String
        var scope: String
        var key: String
        var deviceBound: Bool
        var tokenSecret: String?
    }

    /// `GET /v1/features`'s answer: `{"features": [...]}`, sorted by key.
    struct FeatureList: ResponseEncodable {
        var features: [Feature]
    }

    // MARK: - Apps and keys

    @Sendable func createApp(_ request: Request, context: AppRequestContext) async throws -> EditedResponse<CreatedApp> {
        struct Body: Decodable { var name: String }
        var request = request
        let body = try ConfigurationBody.decode(Body.self, from: try await request.bodyData(limit: 64 * 1024), shape: ConfigurationBody.app)
        let created = try await catalog.createApp(name: body.name, actor: .adminToken)
        return EditedResponse(
            status: .created,
            response: CreatedApp(
                appId: created.appID.uuidString.lowercased(), name: body.name, apiKey: created.apiKey,
                keyId: created.keyID.uuidString.lowercased()))
    }

    @Sendable func createKey(_ request: Request, context: AppRequestContext, caller: APIIdentity) async throws -> EditedResponse<CreatedKey> {
        struct Body: Decodable { var scope: String; var deviceBound: Bool? }
        var request = request
        let body = try ConfigurationBody.decode(Body.self, from: try await request.bodyData(limit: 64 * 1024), shape: ConfigurationBody.key)
        guard let scope = KeyScope(rawValue: body.scope) else {
            throw APIError(.validationFailed, "scope: must be ingest, read or admin")
        }
        let deviceBound = body.deviceBound ?? false
        let created = try await catalog.createKey(
            appID: caller.appID, scope: scope, deviceBound: deviceBound, actor: .key(caller.keyID))
        return EditedResponse(
            status: .created,
            response: CreatedKey(
                id: created.id.uuidString.lowercased(), scope: scope.rawValue, key: created.key, deviceBound: deviceBound,
                tokenSecret: created.tokenSecret))
    }

    @Sendable func revokeKey(_ request: Request, context: AppRequestContext, caller: APIIdentity) async throws -> Response {
        guard let id = context.parameters.get("id").flatMap(UUID.init(uuidString:)) else {
            throw APIError(.notFound, "no such key")
        }
        guard try await catalog.revokeKey(appID: caller.appID, keyID: id, actor: .key(caller.keyID)) else {
            throw APIError(.notFound, "no such key")
        }
        return Response(status: .noContent)
    }

    // MARK: - Features

    @Sendable func putFeature(_ request: Request, context: AppRequestContext, caller: APIIdentity) async throws -> EditedResponse<Feature> {
        let feature = try await Self.feature(request, context)
        let created = try await catalog.putFeature(appID: caller.appID, feature: feature, actor: .key(caller.keyID))
        return EditedResponse(status: created ? HTTPResponse.Status.created : .ok, response: feature)
    }

    /// `PATCH /v1/features/{key}` (SPEC §14 "Partial changes"): a JSON merge patch (RFC 7396;
    /// `application/merge-patch+json` or `application/json`) of the feature's fields. 200 with
    /// the whole feature; 404 for an unknown key; a member that is not a feature's field is a
    /// 422 naming it, as in a PUT, and the result is checked as a PUT body is. Only the fields
    /// the patch names change, atomically (`FeatureCatalog.patch`).
    @Sendable func patchFeature(_ request: Request, context: AppRequestContext, caller: APIIdentity) async throws -> Feature {
        let key = context.parameters.get("key") ?? ""
        try Self.requireMergePatch(request)
        var request = request
        let body = try await request.bodyData(limit: 64 * 1024)
        guard let patch = JSONNode.parse(bytes: Array(body)) else {
            throw APIError(.malformedJSON, "the body is not JSON")
        }
        try ConfigurationBody.checkMembers(of: body, shape: ConfigurationBody.feature)
        guard let members = patch.members else {
            throw APIError(.invalidRequest, "the body must be an object: a merge patch of the feature's fields")
        }
        // A key no feature can have is not looked up (nor sent to the database).
        guard (try? ClientText.checkKey(key, field: "key", bytes: 1...64)) != nil,
            let feature = try await catalog.patchFeature(appID: caller.appID, key: key, patch: members, actor: .key(caller.keyID))
        else {
            throw APIError(.notFound, "no feature \(key.prefix(128))")
        }
        return feature
    }

    /// A PATCH body is a JSON merge patch: `Content-Type` `application/merge-patch+json` (RFC
    /// 7396) or `application/json`, parameters such as `charset` aside; none is read as JSON.
    static func requireMergePatch(_ request: Request) throws {
        guard let contentType = request.headers[.contentType] else { return }
        let mediaType = contentType.split(separator: ";", maxSplits: 1).first?
            .trimmingCharacters(in: .whitespaces).lowercased() ?? ""
        guard mediaType == "application/merge-patch+json" || mediaType == "application/json" else {
            throw APIError(
                .invalidRequest, "Content-Type: a merge patch is application/merge-patch+json or application/json")
        }
    }

    /// `POST /v1/features/{key}/preview` (SPEC §15): the body as PUT takes it, nothing stored;
    /// what that PUT would change for the app's devices now.
    @Sendable func previewFeature(_ request: Request, context: AppRequestContext, caller: APIIdentity) async throws -> FeaturePreview {
        let feature = try await Self.feature(request, context)
        return try await catalog.previewFeature(appID: caller.appID, feature: feature, cancellation: context.clientGone())
    }

    /// The feature of a PUT or preview body: a member the API does not define is a 422 naming
    /// it (a `"enabled": false` must not look accepted), and so is a `null` but for
    /// `minAppVersion` (`"disabled": null` must not read as false; SPEC §14), then
    /// `FeatureCatalog`'s checks.
    static func feature(_ request: Request, _ context: AppRequestContext) async throws -> Feature {
        let key = context.parameters.get("key") ?? ""
        var request = request
        let body = try await request.bodyData(limit: 64 * 1024)
        try ConfigurationBody.checkMembers(of: body, shape: ConfigurationBody.feature, refusingNulls: true)
        do {
            return try FeatureCatalog.parseDefinition(key: key, body: body)
        } catch {
            throw APIError(error)
        }
    }

    @Sendable func listFeatures(_ request: Request, context: AppRequestContext, caller: APIIdentity) async throws -> FeatureList {
        FeatureList(features: try await catalog.listFeatures(appID: caller.appID))
    }

    @Sendable func getFeature(_ request: Request, context: AppRequestContext, caller: APIIdentity) async throws -> Feature {
        let key = context.parameters.get("key") ?? ""
        guard let feature = try await catalog.feature(appID: caller.appID, key: key) else {
            throw APIError(.notFound, "no feature \(key.prefix(128))")
        }
        return feature
    }

    @Sendable func deleteFeature(_ request: Request, context: AppRequestContext, caller: APIIdentity) async throws -> Response {
        let key = context.parameters.get("key") ?? ""
        // A key no feature can have is not looked up (nor sent to the database).
        guard (try? ClientText.checkKey(key, field: "key", bytes: 1...64)) != nil,
            try await catalog.deleteFeature(appID: caller.appID, key: key, actor: .key(caller.keyID))
        else {
            throw APIError(.notFound, "no feature \(key.prefix(128))")
        }
        return Response(status: .noContent)
    }
}
