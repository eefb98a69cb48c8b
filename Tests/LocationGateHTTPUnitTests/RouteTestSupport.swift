import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LocationGateService
import Logging
import NIOCore

@testable import LocationGateHTTP

/// Route collections tested without a database: each is handed an in-memory fake of the one
/// service face it calls, under a `/v1` area as the server builds it (the error bodies, the
/// area's 405s), with the key check replaced by `StubKeys`.
enum RouteTestSupport {
    /// The app every stub key belongs to.
    static let appID = UUID(uuid: (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16))

    /// The application of the collections `register` mounts on the `/v1` area.
    static func application(_ register: (RouteTable) -> Void) -> some ApplicationProtocol {
        let router = IndexedRouter(router: Router(context: AppRequestContext.self))
        router.router.add(middleware: ErrorBodyMiddleware())
        let routes = RouteTable(router: router)
        let v1 = routes.area("/v1", middleware: [StubKeys()])
        register(v1)
        routes.registerMethodNotAllowed()
        return Application(router: router, logger: Logger(label: "route-tests"))
    }

    /// `Authorization: Bearer <scope>` (ingest, read or admin) as a key of that scope of `appID`.
    static func key(_ scope: KeyScope?) -> HTTPFields {
        var fields = HTTPFields()
        if let scope { fields[.authorization] = "Bearer \(scope.rawValue)" }
        fields[.contentType] = "application/json"
        return fields
    }

    /// The body as JSON, or an empty object.
    static func json(_ response: TestResponse) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(response.body.readableBytesView))) as? [String: Any] ?? [:]
    }

    /// SPEC §5's error body: `{"error": {"code", "message", "index"}}`.
    static func error(_ response: TestResponse) -> [String: Any] {
        json(response)["error"] as? [String: Any] ?? [:]
    }
}

/// In place of `AuthenticationMiddleware`: `Bearer ingest`, `Bearer read` and `Bearer admin`
/// are keys of those scopes of `RouteTestSupport.appID`; no token, no identity.
struct StubKeys: RouterMiddleware {
    typealias Context = AppRequestContext

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        if let header = request.headers[.authorization], header.hasPrefix("Bearer "),
           let scope = KeyScope(rawValue: String(header.dropFirst("Bearer ".count))) {
            context.identity = APIIdentity(keyID: UUID(), appID: RouteTestSupport.appID, scope: scope)
        }
        return try await next(request, context)
    }
}
