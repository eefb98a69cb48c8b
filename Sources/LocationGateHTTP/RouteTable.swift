import HTTPTypes
import Hummingbird
import LocationGateService

/// The routes as they are registered, so that a known path asked with another method is a 405
/// `methodNotAllowed` (with `Allow`) rather than the router's bare 404. Hummingbird's router
/// answers both with the same not-found responder; registering the other methods of each path
/// as routes of their own is what tells them apart.
///
/// A table is the router or one of its groups (`group(_:middleware:)`): an area whose routes
/// share middleware, such as OFREP's error format. Its 405s are registered in the same group,
/// so they get the same middleware.
final class RouteTable {
    typealias Handler = @Sendable (Request, AppRequestContext) async throws -> Response

    private let on: (RouterPath, HTTPRequest.Method, @escaping Handler) -> Void
    private let prefix: String
    private var paths: [(path: String, methods: [HTTPRequest.Method])] = []
    private var groups: [RouteTable] = []

    init(router: Router<AppRequestContext>) {
        self.prefix = ""
        self.on = { path, method, handler in router.on(path, method: method, use: handler) }
    }

    private init(group: RouterGroup<AppRequestContext>, prefix: String) {
        self.prefix = prefix
        self.on = { path, method, handler in group.on(path, method: method, use: handler) }
    }

    /// The routes under `prefix`, behind `middleware`.
    func group(_ prefix: String, router: Router<AppRequestContext>, middleware: some RouterMiddleware<AppRequestContext>) -> RouteTable {
        let table = RouteTable(group: router.group(RouterPath(prefix)).add(middleware: middleware), prefix: prefix)
        groups.append(table)
        return table
    }

    func get(_ path: String, use handler: @escaping Handler) { add(.get, path, handler) }
    func post(_ path: String, use handler: @escaping Handler) { add(.post, path, handler) }
    func put(_ path: String, use handler: @escaping Handler) { add(.put, path, handler) }
    func delete(_ path: String, use handler: @escaping Handler) { add(.delete, path, handler) }

    /// A path relative to the table (`/v1/events`, or `evaluate/flags` in the OFREP group).
    private func add(_ method: HTTPRequest.Method, _ path: String, _ handler: @escaping Handler) {
        on(RouterPath(path), method, handler)
        if let index = paths.firstIndex(where: { $0.path == path }) {
            paths[index].methods.append(method)
        } else {
            paths.append((path, [method]))
        }
    }

    /// Registers the 405 answers of this table and its groups, and, in a group, a 404 for any
    /// other path under its prefix (so that it too gets the group's format). Call once every
    /// route is added.
    func registerMethodNotAllowed() {
        let methods: [HTTPRequest.Method] = [.get, .post, .put, .delete, .patch]
        for (path, allowed) in paths {
            let allow = allowed.map(\.rawValue).joined(separator: ", ")
            for method in methods where !allowed.contains(method) {
                on(RouterPath(path), method) { request, _ -> Response in
                    var error = APIError(.methodNotAllowed, "\(request.method.rawValue) is not allowed here; use \(allow)")
                    error.headers[.allow] = allow
                    throw error
                }
            }
        }
        if !prefix.isEmpty {
            for method in methods {
                on(RouterPath("**"), method) { _, _ -> Response in throw APIError(.notFound, "no such resource") }
            }
        }
        for group in groups { group.registerMethodNotAllowed() }
    }
}
