import HTTPTypes
import Hummingbird
import LocationGateService

/// The routes as they are registered, so that a known path asked with another method is a 405
/// `methodNotAllowed` (with `Allow`) rather than the router's bare 404. Hummingbird's router
/// answers both with the same not-found responder; registering the other methods of each path
/// as routes of their own is what tells them apart.
///
/// A table is the router or one of its areas (`group(_:catchAll:middleware:)`): a
/// prefix whose routes share middleware, such as the API keys and the rate limit, or OFREP's
/// error format. An area registers route collections (`add(_:)`, one per part of the API, each
/// with its scope groups inside) or single routes, in a scope group (`scoped(_:)`) or not. Its
/// 405s are registered in the area itself, outside every scope group: they get the area's
/// middleware (keys, rate limit, error format), and a wrong method is a 405 whatever the
/// caller's scope. The scope groups of an area share its one list of paths, so that a path
/// whose methods sit in different scope groups (`PUT` and `DELETE` for admin keys, `GET` for
/// read keys) answers one `Allow` with all of them, in the order they were registered.
final class RouteTable {
    typealias Handler = @Sendable (Request, AppRequestContext) async throws -> Response

    /// Where the routes go: the router, an area's group, or a scope group inside one.
    private enum Target {
        case router(RecordingRouter)
        case group(RouterGroup<AppRequestContext>)
    }

    /// An area's paths, each with its methods in the order registered.
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
    /// The area's prefix (`/v1`), which every path of the table starts with; empty for the router.
    private let prefix: String
    /// Whether any other path under the prefix is answered 404 inside the group.
    private let catchAll: Bool
    /// The area's paths, shared with its scope groups.
    private let paths: Paths
    /// Whether this table registers the 405s of `paths` (an area, not one of its scope groups).
    private let answersMethods: Bool
    private var groups: [RouteTable] = []

    convenience init(router: IndexedRouter) {
        let root = router.recorder
        self.init(target: .router(root), root: root, prefix: "", catchAll: false, paths: Paths(), answersMethods: true)
    }

    private init(target: Target, root: RecordingRouter, prefix: String, catchAll: Bool, paths: Paths, answersMethods: Bool) {
        self.target = target
        self.root = root
        self.prefix = prefix
        self.catchAll = catchAll
        self.paths = paths
        self.answersMethods = answersMethods
    }

    /// An area: the routes under `prefix` (registered with their full paths), behind
    /// `middleware`, in that order. With `catchAll`, any other path under the prefix is a 404
    /// inside the group, so that it too gets the group's middleware (OFREP's error format).
    func group(
        _ prefix: String, catchAll: Bool = false, middleware: [any MiddlewareProtocol<Request, Response, AppRequestContext>]
    ) -> RouteTable {
        // Each middleware added to the group itself: one responder each, without a chain's
        // closure per middleware on every request.
        let group = root.group(RouterPath(prefix))
        for item in middleware { group.add(middleware: item) }
        let table = RouteTable(
            target: .group(group), root: root, prefix: prefix, catchAll: catchAll, paths: Paths(), answersMethods: true)
        groups.append(table)
        return table
    }

    /// The routes of this table that require `scope` of their caller: a group inside it with
    /// `RequireScope`, whose paths count among this table's for the 405s.
    func scoped(_ scope: RequireScope) -> RouteTable {
        let group: RouterGroup<AppRequestContext>
        switch target {
        case .router(let router): group = router.scoped(scope)
        case .group(let parent): group = parent.scoped(scope)
        }
        return RouteTable(target: .group(group), root: root, prefix: prefix, catchAll: false, paths: paths, answersMethods: false)
    }

    /// Registers a route collection whose paths are full (`/v1/events`): the part of the API
    /// one area of the service answers, with its scope groups inside.
    func add(_ collection: RouteCollection<AppRequestContext>) {
        Recorder(table: self).addRoutes(collection)
    }

    func get(_ path: String, use handler: @escaping Handler) { add(.get, RouterPath(path), CallbackResponder(callback: handler)) }
    func post(_ path: String, use handler: @escaping Handler) { add(.post, RouterPath(path), CallbackResponder(callback: handler)) }
    func put(_ path: String, use handler: @escaping Handler) { add(.put, RouterPath(path), CallbackResponder(callback: handler)) }
    func delete(_ path: String, use handler: @escaping Handler) { add(.delete, RouterPath(path), CallbackResponder(callback: handler)) }

    /// A full path (`/v1/events`); a group registers it relative to its prefix.
    private func add<Responder: HTTPResponder>(
        _ method: HTTPRequest.Method, _ path: RouterPath, _ responder: Responder
    ) where Responder.Context == AppRequestContext {
        let full = path.description
        precondition(full == prefix || full.hasPrefix(prefix + "/") || prefix.isEmpty, "\(full) is outside the group \(prefix)")
        on(RouterPath(relative(full)), method, responder)
        paths.add(full, method)
    }

    private func on<Responder: HTTPResponder>(
        _ path: RouterPath, _ method: HTTPRequest.Method, _ responder: Responder
    ) where Responder.Context == AppRequestContext {
        switch target {
        case .router(let router): router.on(path, method: method, responder: responder)
        case .group(let group): group.on(path, method: method, responder: responder)
        }
    }

    private func addMiddleware(_ middleware: any MiddlewareProtocol<Request, Response, AppRequestContext>) {
        switch target {
        case .router(let router): router.add(middleware: middleware)
        case .group(let group): group.add(middleware: middleware)
        }
    }

    /// Registers the 405 answers of this table and its areas, and, in an area with
    /// `catchAll`, a 404 for any other path under its prefix (so that it too gets the area's
    /// format). Call once every route is added.
    func registerMethodNotAllowed() {
        let methods: [HTTPRequest.Method] = [.get, .post, .put, .delete, .patch]
        if answersMethods {
            for (path, allowed) in paths.entries {
                let allow = allowed.map(\.rawValue).joined(separator: ", ")
                for method in methods where !allowed.contains(method) {
                    on(RouterPath(relative(path)), method, CallbackResponder<AppRequestContext> { request, _ -> Response in
                        var error = APIError(.methodNotAllowed, "\(request.method.rawValue) is not allowed here; use \(allow)")
                        error.headers[.allow] = allow
                        throw error
                    })
                }
            }
        }
        if catchAll {
            for method in methods {
                on(RouterPath("**"), method, CallbackResponder<AppRequestContext> { _, _ -> Response in throw APIError(.notFound, "no such resource") })
            }
        }
        for group in groups { group.registerMethodNotAllowed() }
    }

    private func relative(_ path: String) -> String {
        prefix.isEmpty ? path : String(path.dropFirst(prefix.count))
    }

    /// The table as Hummingbird's `RouterMethods`, so that `addRoutes` hands it a collection's
    /// routes one by one.
    private struct Recorder: RouterMethods {
        typealias Context = AppRequestContext
        let table: RouteTable

        @discardableResult func on<Responder: HTTPResponder>(
            _ path: RouterPath, method: HTTPRequest.Method, responder: Responder
        ) -> Self where Responder.Context == Context {
            table.add(method, path, responder)
            return self
        }

        @discardableResult func add(middleware: any MiddlewareProtocol<Request, Response, Context>) -> Self {
            table.addMiddleware(middleware)
            return self
        }
    }
}
