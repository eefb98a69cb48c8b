import HTTPTypes
import Hummingbird
import LocationGateService

/// The routes as they are registered, so that a known path asked with another method is a 405
/// `methodNotAllowed` (with `Allow`) rather than the router's bare 404. Hummingbird's router
/// answers both with the same not-found responder; registering the other methods of each path
/// as routes of their own is what tells them apart.
final class RouteTable {
    typealias Handler = @Sendable (Request, AppRequestContext) async throws -> Response

    let router: Router<AppRequestContext>
    private var paths: [(path: String, methods: [HTTPRequest.Method])] = []

    init(router: Router<AppRequestContext>) {
        self.router = router
    }

    func get(_ path: String, use handler: @escaping Handler) { add(.get, path, handler) }
    func post(_ path: String, use handler: @escaping Handler) { add(.post, path, handler) }
    func put(_ path: String, use handler: @escaping Handler) { add(.put, path, handler) }
    func delete(_ path: String, use handler: @escaping Handler) { add(.delete, path, handler) }

    private func add(_ method: HTTPRequest.Method, _ path: String, _ handler: @escaping Handler) {
        router.on(RouterPath(path), method: method, use: handler)
        if let index = paths.firstIndex(where: { $0.path == path }) {
            paths[index].methods.append(method)
        } else {
            paths.append((path, [method]))
        }
    }

    /// Registers the 405 answers; call once every route is added.
    func registerMethodNotAllowed() {
        let methods: [HTTPRequest.Method] = [.get, .post, .put, .delete, .patch]
        for (path, allowed) in paths {
            let allow = allowed.map(\.rawValue).joined(separator: ", ")
            for method in methods where !allowed.contains(method) {
                router.on(RouterPath(path), method: method) { request, _ -> Response in
                    var error = APIError(.methodNotAllowed, "\(request.method.rawValue) is not allowed here; use \(allow)")
                    error.headers[.allow] = allow
                    throw error
                }
            }
        }
    }
}
