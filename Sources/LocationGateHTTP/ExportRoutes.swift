import Foundation
import HTTPTypes
import Hummingbird
import LocationGateService
import NIOCore

/// Access and portability (SPEC §13, GDPR Art. 15 and 20): `GET /v1/users/{u}/export` (the
/// app's admin key) answers everything LocationGate holds of a person,
/// `{"devices": [{"decisions", "deviceId", "history", "state"}], "exportedAt", "userId"}`,
/// streamed as it is read (`UserExport`): the server holds a page of it at a time, whatever the
/// person's size. An unknown user gets `"devices": []`. Logs and metrics name the route
/// template, never the id. Mounted under `/v1`.
struct ExportRoutes {
    let service: any ExportService

    var collection: RouteCollection<AppRequestContext> {
        let routes = RouteCollection(context: AppRequestContext.self)
        routes.scoped(.admin).get("/users/:user/export", use: export)
        return routes
    }

    /// The person's first devices are read before the answer starts, so that a database that
    /// cannot answer is a 503 rather than a body cut short; the rest is written as it is read.
    @Sendable func export(_ request: Request, context: AppRequestContext, caller: APIIdentity) async throws -> Response {
        let user = try PathParameters.identifier(context, "user", field: "userId")
        // Costly work: at most two exports of an app at once (429 beyond), held while it streams.
        let permit = try service.admitExport(appID: caller.appID)
        let export = try await service.beginExport(appID: caller.appID, userID: user, now: Date())
        let service = self.service
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        headers[.cacheControl] = "no-store"
        return Response(status: .ok, headers: headers, body: ResponseBody { writer in
            defer { permit.release() }
            try await service.writeExport(export) { bytes in
                try await writer.write(ByteBuffer(bytes: bytes))
            }
            try await writer.finish(nil)
        })
    }
}
