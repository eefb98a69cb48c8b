import Foundation
import HTTPTypes
import Hummingbird
import LocationAuthorization
import LocationGateService

/// Prompt experiments (SPEC §16), from the service's experiments face (`ExperimentsFace`):
/// changes (PUT, stop, DELETE) take an admin key and are recorded in the admin audit trail
/// with it; reading them, their results and a device's evaluation a read or admin key. The
/// 409s (`keyInUse`, `experimentRunning`, `experimentStopped`) and the definition's 422s are
/// the service's; this reads the bodies strictly (SPEC §14) and writes the answers.
///
/// An experiment is also an OFREP flag (`OFREPFlags`); its key in a gate request is a 404, as
/// any key that names no feature (`GateRoutes`).
struct ExperimentRoutes {
    let experiments: any ExperimentsFace

    var collection: RouteCollection<AppRequestContext> {
        let routes = RouteCollection(context: AppRequestContext.self)
        let admin = routes.scoped(.admin)
        let read = routes.scoped(.read)
        read.get("/v1/experiments", use: list)
        admin.put("/v1/experiments/:key", use: put)
        read.get("/v1/experiments/:key", use: get)
        admin.delete("/v1/experiments/:key", use: delete)
        admin.post("/v1/experiments/:key/stop", use: stop)
        read.get("/v1/experiments/:key/results", use: results)
        read.get("/v1/users/:user/devices/:device/experiments/:key", use: evaluate)
        return routes
    }

    /// `PUT /v1/experiments/{key}`: 201 when it creates, 200 when it replaces, with the
    /// experiment. A member the body does not define is a 422 naming it, before the service
    /// reads the definition (`ExperimentDefinition(key:body:)`); nothing is stored when refused.
    @Sendable func put(_ request: Request, context: AppRequestContext) async throws -> Response {
        let identity = try context.caller()
        let key = context.pathParameter("key") ?? ""
        var request = request
        let body = try await request.bodyData(limit: 64 * 1024)
        try ExperimentFormat.checkMembers(of: body)
        let (experiment, created) = try await experiments.putExperiment(
            appID: identity.appID, key: key, body: Array(body), actor: .key(identity.keyID))
        return try JSONResponse.make(created ? .created : .ok, experiment)
    }

    /// `GET /v1/experiments`: `{"experiments": [...]}`, sorted by key.
    @Sendable func list(_ request: Request, context: AppRequestContext) async throws -> Response {
        let identity = try context.caller()
        struct List: Encodable { var experiments: [Experiment] }
        return try JSONResponse.make(.ok, List(experiments: try await experiments.experiments(appID: identity.appID)))
    }

    @Sendable func get(_ request: Request, context: AppRequestContext) async throws -> Response {
        let identity = try context.caller()
        let key = try Self.experimentKey(context)
        return try JSONResponse.make(.ok, try await experiments.experiment(appID: identity.appID, key: key))
    }

    /// `DELETE /v1/experiments/{key}`: 204, the experiment gone with its exposures and results.
    @Sendable func delete(_ request: Request, context: AppRequestContext) async throws -> Response {
        let identity = try context.caller()
        let key = try Self.experimentKey(context)
        try await experiments.deleteExperiment(appID: identity.appID, key: key, actor: .key(identity.keyID))
        return Response(status: .noContent)
    }

    /// `POST /v1/experiments/{key}/stop` `{"winner"}`: the body, and `winner` in it, optional
    /// (the control); read strictly, so that a misspelt `winnner` is a 422 rather than a stop
    /// with the control. 200 with the stopped experiment.
    @Sendable func stop(_ request: Request, context: AppRequestContext) async throws -> Response {
        let identity = try context.caller()
        let key = try Self.experimentKey(context)
        var request = request
        let data = try await request.bodyData(limit: 64 * 1024)
        struct Body: Decodable { var winner: String? }
        var winner: String?
        if !data.isEmpty {
            winner = try ConfigurationBody.decode(Body.self, from: data, shape: ConfigurationBody.experimentStop).winner
        }
        let experiment = try await experiments.stopExperiment(
            appID: identity.appID, key: key, winner: winner, actor: .key(identity.keyID))
        return try JSONResponse.make(.ok, experiment)
    }

    /// `GET /v1/experiments/{key}/results`: JSON, or CSV asked with `Accept: text/csv` (as the
    /// analytics are, SPEC §6).
    @Sendable func results(_ request: Request, context: AppRequestContext) async throws -> Response {
        let identity = try context.caller()
        let key = try Self.experimentKey(context)
        let results = try await experiments.experimentResults(appID: identity.appID, key: key)
        if request.headers[.accept]?.contains("text/csv") == true {
            return JSONResponse.make(.ok, data: Data(ExperimentFormat.csv(results).utf8), contentType: "text/csv; charset=utf-8")
        }
        return try JSONResponse.make(.ok, ExperimentFormat.Results(results))
    }

    /// `GET /v1/users/{u}/devices/{d}/experiments/{key}`: the device's variant, its exposure
    /// recorded durably before the answer when this is its first eligible evaluation.
    @Sendable func evaluate(_ request: Request, context: AppRequestContext) async throws -> Response {
        let identity = try context.caller()
        let user = try PathParameters.identifier(context, "user", field: "userId")
        let device = try PathParameters.identifier(context, "device", field: "deviceId")
        let key = try Self.experimentKey(context)
        let answer = try await experiments.evaluateExperiment(appID: identity.appID, key: key, userID: user, deviceID: device)
        return try JSONResponse.make(.ok, ExperimentFormat.Answer(answer))
    }

    /// The path's key; one no experiment can have is a 404 without a look-up (nor a trip to
    /// the database), as a feature's is.
    static func experimentKey(_ context: AppRequestContext) throws -> String {
        let key = context.pathParameter("key") ?? ""
        guard (try? ClientText.checkKey(key, field: "key", bytes: ExperimentDefinition.keyBytes)) != nil else {
            throw APIError(.notFound, "no experiment \(key.prefix(128))")
        }
        return key
    }
}
