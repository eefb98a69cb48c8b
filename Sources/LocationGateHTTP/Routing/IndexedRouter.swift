import HTTPTypes
import Hummingbird

/// The application's router: Hummingbird's, with a `RouteIndex` of its plain routes in front.
/// Every route is registered through `recorder` (a `RouterMethods` that hands each route to
/// the router and keeps it, with the router's middleware around it as the router wraps it), so
/// that the index holds exactly the responders the trie would call.
public final class IndexedRouter: HTTPResponderBuilder {
    let router: Router<AppRequestContext>
    private let registrations = Registrations()

    init(router: Router<AppRequestContext>) {
        self.router = router
    }

    /// Where routes are registered: the router, recording each one.
    var recorder: RecordingRouter { RecordingRouter(router: router, registrations: registrations) }

    public func buildResponder() -> IndexedRouterResponder {
        IndexedRouterResponder(index: RouteIndex(registrations.entries), router: router.buildResponder())
    }

    /// The registrations, appended while the routes are built (one thread, at start-up).
    final class Registrations {
        var entries: [RouteIndex.Registration] = []
        /// The routes the route tables registered with their full paths, without the 405s they
        /// add: the API that openapi.yaml describes (and the dashboard's pages).
        var routes: [(method: HTTPRequest.Method, path: String)] = []
    }

    /// The routes registered, `METHOD /path` with parameters as `{name}`, in the order
    /// registered (not the 405s of their paths).
    var routes: [(method: HTTPRequest.Method, path: String)] { registrations.routes }
}

/// Registers on the router and records what it registered. Groups made from it (`group`,
/// `scoped`) register through it too, with their full paths and their middleware.
struct RecordingRouter: RouterMethods {
    typealias Context = AppRequestContext
    let router: Router<AppRequestContext>
    let registrations: IndexedRouter.Registrations

    @discardableResult func on<Responder: HTTPResponder>(
        _ path: RouterPath, method: HTTPRequest.Method, responder: Responder
    ) -> Self where Responder.Context == Context {
        router.on(path, method: method, responder: responder)
        // As `Router.on` wraps it: the router's middleware registered so far around the route's.
        let wrapped = router.middlewares.constructResponder(finalResponder: responder)
        registrations.entries.append(RouteIndex.Registration(path: path, method: method, responder: wrapped))
        return self
    }

    @discardableResult func add(middleware: any MiddlewareProtocol<Request, Response, Context>) -> Self {
        router.add(middleware: middleware)
        return self
    }
}

/// Answers from the index what it holds, and everything else from the trie.
public struct IndexedRouterResponder: HTTPResponder {
    let index: RouteIndex
    let router: RouterResponder<AppRequestContext>

    public func respond(to request: Request, context: AppRequestContext) async throws -> Response {
        guard let match = index.match(request.uri.path, method: request.method) else {
            return try await router.respond(to: request, context: context)
        }
        // What `RouterResponder` does once its trie found the route: handlers read
        // `context.parameters` whichever found it.
        var context = context
        do {
            context.coreContext.parameters = match.parameters
            context.coreContext.endpointPath.value = match.route.path
            return try await match.responder.respond(to: request, context: context)
        } catch let error as any HTTPResponseError {
            return try error.response(from: request, context: context)
        }
    }
}
