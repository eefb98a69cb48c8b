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
/// any key that names no feature (`GateRoutes`). Mounted under `/v1`.
struct ExperimentRoutes {
    let experiments: any ExperimentsFace

    var collection: RouteCollection<AppRequestContext> {
        let routes = RouteCollection(context: AppRequestContext.self)
        let admin = routes.scoped(.admin)
        let read = routes.scoped(.read)
        read.get("/experiments", use: list)
        admin.put("/experiments/:key", use: put)
        read.get("/experiments/:key", use: get)
        admin.delete("/experiments/:key", use: delete)
        admin.post("/experiments/:key/stop", use: stop)
        read.get("/experiments/:key/results", use: results)
        read.get("/users/:user/devices/:device/experiments/:key", use: evaluate)
        return routes
    }

    /// `GET /v1/experiments`'s answer: `{"experiments": [...]}`, sorted by key.
    struct ExperimentList: ResponseEncodable {
        var experiments: [Experiment]
    }

    /// `PUT /v1/experiments/{key}`: 201 when it creates, 200 when it replaces, with the
    /// experiment. A member the body does not define is a 422 naming it, before the service
    /// reads the definition (`ExperimentDefinition(key:body:)`); nothing is stored when refused.
    @Sendable func put(_ request: Request, context: AppRequestContext, caller: APIIdentity) async throws -> EditedResponse<Experiment> {
        let key = context.parameters.get("key") ?? ""
        var request = request
        let body = try await request.bodyData(limit: 64 * 1024)
        try ExperimentFormat.checkMembers(of: body)
        let (experiment, created) = try await experiments.putExperiment(
            appID: caller.appID, key: key, body: Array(body), actor: .key(caller.keyID))
        return EditedResponse(status: created ? HTTPResponse.Status.created : .ok, response: experiment)
    }

    /// `GET /v1/experiments`: `{"experiments": [...]}`, sorted by key.
    @Sendable func list(_ request: Request, context: AppRequestContext, caller: APIIdentity) async throws -> ExperimentList {
        ExperimentList(experiments: try await experiments.experiments(appID: caller.appID))
    }

    @Sendable func get(_ request: Request, context: AppRequestContext, caller: APIIdentity) async throws -> Experiment {
        let key = try Self.experimentKey(context)
        return try await experiments.experiment(appID: caller.appID, key: key)
    }

    /// `DELETE /v1/experiments/{key}`: 204, the experiment gone with its exposures and results.
    @Sendable func delete(_ request: Request, context: AppRequestContext, caller: APIIdentity) async throws -> Response {
        let key = try Self.experimentKey(context)
        try await experiments.deleteExperiment(appID: caller.appID, key: key, actor: .key(caller.keyID))
        return Response(status: .noContent)
    }

    /// `POST /v1/experiments/{key}/stop` `{"winner"}`: the body, and `winner` in it, optional
    /// (the control); read strictly, so that a misspelt `winnner` is a 422 rather than a stop
    /// with the control. 200 with the stopped experiment.
    @Sendable func stop(_ request: Request, context: AppRequestContext, caller: APIIdentity) async throws -> Experiment {
        let key = try Self.experimentKey(context)
        var request = request
        let data = try await request.bodyData(limit: 64 * 1024)
        struct Body: Decodable { var winner: String? }
        var winner: String?
        if !data.isEmpty {
            winner = try ConfigurationBody.decode(Body.self, from: data, shape: ConfigurationBody.experimentStop).winner
        }
        return try await experiments.stopExperiment(
            appID: caller.appID, key: key, winner: winner, actor: .key(caller.keyID))
    }

    /// `GET /v1/experiments/{key}/results`: JSON, or CSV asked with `Accept: text/csv` (as the
    /// analytics are, SPEC §6).
    @Sendable func results(_ request: Request, context: AppRequestContext, caller: APIIdentity) async throws -> Response {
        let key = try Self.experimentKey(context)
        let results = try await experiments.experimentResults(appID: caller.appID, key: key)
        if request.headers[.accept]?.contains("text/csv") == true {
            return PreparedBody(bytes: ExperimentFormat.csv(results).utf8, contentType: "text/csv; charset=utf-8").response
        }
        return try ExperimentFormat.Results(results).response(from: request, context: context)
    }

    /// `GET /v1/users/{u}/devices/{d}/experiments/{key}`: the device's variant, its exposure
    /// recorded durably before the answer when this is its first eligible evaluation.
    @Sendable func evaluate(_ request: Request, context: AppRequestContext, caller: APIIdentity) async throws -> ExperimentFormat.Answer {
        let user = try PathParameters.identifier(context, "user", field: "userId")
        let device = try PathParameters.identifier(context, "device", field: "deviceId")
        let key = try Self.experimentKey(context)
        let answer = try await experiments.evaluateExperiment(appID: caller.appID, key: key, userID: user, deviceID: device)
        return ExperimentFormat.Answer(answer)
    }

    /// The path's key; one no experiment can have is a 404 without a look-up (nor a trip to
    /// the database), as a feature's is.
    static func experimentKey(_ context: AppRequestContext) throws -> String {
        let key = context.parameters.get("key") ?? ""
        guard (try? ClientText.checkKey(key, field: "key", bytes: ExperimentDefinition.keyBytes)) != nil else {
            throw APIError(.notFound, "no experiment \(key.prefix(128))")
        }
        return key
    }
}

// The experiment answers of `ExperimentFormat`, returned by the handlers above: written by the
// context's `SortedJSONEncoder`.
extension ExperimentFormat.Results: ResponseEncodable {}
extension ExperimentFormat.Answer: ResponseEncodable {}
