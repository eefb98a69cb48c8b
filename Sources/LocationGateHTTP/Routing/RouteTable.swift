import HTTPTypes
import Hummingbird
import LocationGateService

/// The router's routes, as Hummingbird's `RouterMethods`, with what the router alone does not
/// do: a known path asked with another method is a 405 `methodNotAllowed` (with `Allow`) rather
/// than the router's bare 404. Hummingbird's router answers both with the same not-found
/// responder; registering the other methods of each path as routes of their own is what tells
/// them apart.
///
/// A table is the router or one of its areas (`area(_:catchAll:middleware:)`): a prefix whose
/// routes share middleware, such as the API keys and the rate limit, or OFREP's error format.
/// Route collections are mounted on a table as on any router (`addRoutes(_:atPath:)`), with
/// paths relative to the area (`/users/:user/gates` under `/v1`), and their scope groups
/// inside (`scoped(_:)`). An area's 405s are registered in the area itself, outside every
/// scope group: they get the area's middleware (keys, rate limit, error format), and a wrong
/// method is a 405 whatever the caller's scope. All the methods of a path count together,
/// whichever scope group registered them, so that a path whose methods need different scopes
/// (`PUT` and `DELETE` for admin keys, `GET` for read keys) answers one `Allow` with all of
/// them, in the order they were registered.
final class RouteTable: RouterMethods {
    typealias Context = AppRequestContext

    /// Where the routes go: the router, or an area's group.
    private enum Target {
        case router(RecordingRouter)
        case group(RouterGroup<AppRequestContext>)
    }

    /// An area's paths (full, `/v1/events`), each with its methods in the order registered.
    private final class Paths {
        var entries: [(path: String, methods: [HTTPRequest.Method])] = []

        func add(_ path: String, _ method: HTTPRequest.Method) {
            if let index = entries.firstIndex(where: { $0.path == path }) {
                entries[index].methods.append(method)
            } else {
                entries.append((path, [method]))
            }
        }
    }

    private let target: Target
    /// The router every table of this one registers through.
    private let root: RecordingRouter
    /// The area's prefix (`/v1`); empty for the router.
    private let prefix: String
    /// Whether any other path under the prefix is answered 404 inside the group.
    private let catchAll: Bool
    private let paths = Paths()
    private var areas: [RouteTable] = []

    convenience init(router: IndexedRouter) {
        let root = router.recorder
        self.init(target: .router(root), root: root, prefix: "", catchAll: false)
    }

    private init(target: Target, root: RecordingRouter, prefix: String, catchAll: Bool) {
        self.target = target
        self.root = root
        self.prefix = prefix
        self.catchAll = catchAll
    }

    /// An area: the routes under `prefix`, behind `middleware`, in that order. With
    /// `catchAll`, any other path under the prefix is a 404 inside the group, so that it too
    /// gets the group's middleware (OFREP's error format, the dashboard's session).
    func area(
        _ prefix: String, catchAll: Bool = false, middleware: [any MiddlewareProtocol<Request, Response, AppRequestContext>]
    ) -> RouteTable {
        // Each middleware added to the group itself: one responder each, without a chain's
        // closure per middleware on every request.
        let group = root.group(RouterPath(prefix))
        for item in middleware { group.add(middleware: item) }
        let table = RouteTable(target: .group(group), root: root, prefix: prefix, catchAll: catchAll)
        areas.append(table)
        return table
    }

    /// Registers a route at `path`, relative to the area.
    @discardableResult func on<Responder: HTTPResponder>(
        _ path: RouterPath, method: HTTPRequest.Method, responder: Responder
    ) -> Self where Responder.Context == AppRequestContext {
        register(path, method, responder)
        let full = RouterPath(prefix).appendingPath(path).description
        paths.add(full, method)
        root.registrations.routes.append((method, full))
        return self
    }

    @discardableResult func add(middleware: any MiddlewareProtocol<Request, Response, AppRequestContext>) -> Self {
        switch target {
        case .router(let router): router.add(middleware: middleware)
        case .group(let group): group.add(middleware: middleware)
        }
        return self
    }

    private func register<Responder: HTTPResponder>(
        _ path: RouterPath, _ method: HTTPRequest.Method, _ responder: Responder
    ) where Responder.Context == AppRequestContext {
        switch target {
        case .router(let router): router.on(path, method: method, responder: responder)
        case .group(let group): group.on(path, method: method, responder: responder)
        }
    }

    /// Registers the 405 answers of this table and its areas, and, in an area with
    /// `catchAll`, a 404 for any other path under its prefix (so that it too gets the area's
    /// format). Call once every route is added.
    func registerMethodNotAllowed() {
        let methods: [HTTPRequest.Method] = [.get, .post, .put, .delete, .patch]
        for (path, allowed) in paths.entries {
            let allow = allowed.map(\.rawValue).joined(separator: ", ")
            for method in methods where !allowed.contains(method) {
                register(RouterPath(relative(path)), method, CallbackResponder<AppRequestContext> { request, _ -> Response in
                    var error = APIError(.methodNotAllowed, "\(request.method.rawValue) is not allowed here; use \(allow)")
                    error.headers[.allow] = allow
                    throw error
                })
            }
        }
        if catchAll {
            for method in methods {
                register(RouterPath("**"), method, CallbackResponder<AppRequestContext> { _, _ -> Response in throw APIError(.notFound, "no such resource") })
            }
        }
        for area in areas { area.registerMethodNotAllowed() }
    }

    /// A full path as the area registers it: relative to its prefix.
    private func relative(_ path: String) -> String {
        guard !prefix.isEmpty else { return path }
        let rest = String(path.dropFirst(prefix.count))
        return rest.isEmpty ? "/" : rest
    }
}
