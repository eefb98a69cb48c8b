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
    /// Whether any other path under the prefix is answered 404 inside the group.
    private let catchAll: Bool
    private var paths: [(path: String, methods: [HTTPRequest.Method])] = []
    private var groups: [RouteTable] = []

    init(router: Router<AppRequestContext>) {
        self.prefix = ""
        self.catchAll = false
        self.on = { path, method, handler in router.on(path, method: method, use: handler) }
    }

    private init(group: RouterGroup<AppRequestContext>, prefix: String, catchAll: Bool) {
        self.prefix = prefix
        self.catchAll = catchAll
        self.on = { path, method, handler in group.on(path, method: method, use: handler) }
    }

    /// The routes under `prefix` (registered with their full paths), behind `middleware`, in
    /// that order. With `catchAll`, any other path under the prefix is a 404 inside the group,
    /// so that it too gets the group's middleware (OFREP's error format).
    func group(
        _ prefix: String, router: Router<AppRequestContext>, catchAll: Bool = false,
        middleware: [any RouterMiddleware<AppRequestContext>]
    ) -> RouteTable {
        let group = router.group(RouterPath(prefix)).add(middleware: MiddlewareChain(items: middleware))
        let table = RouteTable(group: group, prefix: prefix, catchAll: catchAll)
        groups.append(table)
        return table
    }

    func get(_ path: String, use handler: @escaping Handler) { add(.get, path, handler) }
    func post(_ path: String, use handler: @escaping Handler) { add(.post, path, handler) }
    func put(_ path: String, use handler: @escaping Handler) { add(.put, path, handler) }
    func delete(_ path: String, use handler: @escaping Handler) { add(.delete, path, handler) }

    /// A full path (`/v1/events`); a group registers it relative to its prefix.
    private func add(_ method: HTTPRequest.Method, _ path: String, _ handler: @escaping Handler) {
        precondition(path.hasPrefix(prefix), "\(path) is outside the group \(prefix)")
        on(RouterPath(relative(path)), method, handler)
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
                on(RouterPath(relative(path)), method) { request, _ -> Response in
                    var error = APIError(.methodNotAllowed, "\(request.method.rawValue) is not allowed here; use \(allow)")
                    error.headers[.allow] = allow
                    throw error
                }
            }
        }
        if catchAll {
            for method in methods {
                on(RouterPath("**"), method) { _, _ -> Response in throw APIError(.notFound, "no such resource") }
            }
        }
        for group in groups { group.registerMethodNotAllowed() }
    }

    private func relative(_ path: String) -> String {
        prefix.isEmpty ? path : String(path.dropFirst(prefix.count))
    }
}

/// A group's middleware in order, as one middleware (the group takes one per call, typed).
struct MiddlewareChain: RouterMiddleware {
    typealias Context = AppRequestContext
    let items: [any RouterMiddleware<AppRequestContext>]

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        try await run(from: 0, request, context, next)
    }

    private func run(
        from index: Int, _ request: Request, _ context: Context, _ next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        guard index < items.count else { return try await next(request, context) }
        return try await items[index].handle(request, context: context) { request, context in
            try await run(from: index + 1, request, context, next)
        }
    }
}
