import HTTPTypes
import Hummingbird
import LocationGateService

/// What a group of routes requires of its caller (SPEC §5): an app key with the ingest, read or
/// admin scope (an admin key may do what the others may) or with any scope. A caller without
/// it is refused before any handler runs: 401 without a key, 403 with the wrong scope (or the
/// admin token where a key is needed). The admitted key is handed to the handler as an
/// argument (`ScopedRoutes`), so a handler that acts for an app cannot be registered without
/// a scope, and reads no optional.
///
/// Only routes are in a scope group: the 405s of their paths are registered outside it
/// (`RouteTable`), so that a wrong method is a 405 whoever asks.
struct RequireScope: Sendable {
    let requirement: Requirement
    /// What a caller the group does not admit is told instead of 403, when a route must not
    /// tell that what it names exists (an erasure's record is 404 to any key but the app's
    /// admin key); nil for the 403. A request without a key is 401 either way.
    var refusal: APIError? = nil

    /// Appending events: an ingest or admin key.
    static let ingest = RequireScope(requirement: .ingest)
    /// Gates, history, state, analytics, feeds, OFREP: a read or admin key.
    static let read = RequireScope(requirement: .read)
    /// Keys, features and the app's settings: an admin key.
    static let admin = RequireScope(requirement: .admin)
    /// What any of the app's keys may ask (which app and scope it has): a key of any scope.
    static let anyKey = RequireScope(requirement: .anyKey)

    /// An admin key, every other caller with a key told `refusal` instead of 403.
    static func admin(otherwise refusal: APIError) -> RequireScope {
        RequireScope(requirement: .admin, refusal: refusal)
    }

    /// The caller's key, if it has the scope.
    func admit(_ context: AppRequestContext) throws -> APIIdentity {
        do {
            return try context.require(requirement)
        } catch {
            guard let refusal, (error as? APIError)?.error.code == .forbidden else { throw error }
            throw refusal
        }
    }
}

/// Creating apps: the configuration's admin token alone (`LOCGATE_ADMIN_TOKEN`); 401 without
/// it, 403 for an app key.
struct RequireAdminToken: RouterMiddleware {
    typealias Context = AppRequestContext

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard context.isAdminToken else {
            if context.identity != nil { throw APIError(.forbidden, "only the admin token creates apps") }
            throw APIError(.unauthorized, "the admin token is required (Authorization: Bearer TOKEN)")
        }
        return try await next(request, context)
    }
}

/// Routes of a collection that require one scope of their caller: each handler is called with
/// the admitted key (`(request, context, caller)`), after `RequireScope.admit`. Registered on
/// the parent (a `RouteCollection`, a group) as any route, with the same paths.
struct ScopedRoutes<Parent: RouterMethods<AppRequestContext>> {
    typealias Handler<Output> = @Sendable (Request, AppRequestContext, APIIdentity) async throws -> Output

    let parent: Parent
    let scope: RequireScope

    @discardableResult func get<Output: ResponseGenerator>(_ path: RouterPath = "", use handler: @escaping Handler<Output>) -> Self {
        on(path, method: .get, use: handler)
    }

    @discardableResult func post<Output: ResponseGenerator>(_ path: RouterPath = "", use handler: @escaping Handler<Output>) -> Self {
        on(path, method: .post, use: handler)
    }

    @discardableResult func put<Output: ResponseGenerator>(_ path: RouterPath = "", use handler: @escaping Handler<Output>) -> Self {
        on(path, method: .put, use: handler)
    }

    @discardableResult func patch<Output: ResponseGenerator>(_ path: RouterPath = "", use handler: @escaping Handler<Output>) -> Self {
        on(path, method: .patch, use: handler)
    }

    @discardableResult func delete<Output: ResponseGenerator>(_ path: RouterPath = "", use handler: @escaping Handler<Output>) -> Self {
        on(path, method: .delete, use: handler)
    }

    @discardableResult func on<Output: ResponseGenerator>(
        _ path: RouterPath, method: HTTPRequest.Method, use handler: @escaping Handler<Output>
    ) -> Self {
        let scope = scope
        parent.on(path, method: method) { request, context in
            try await handler(request, context, try scope.admit(context))
        }
        return self
    }
}

extension RouterMethods where Context == AppRequestContext {
    /// These routes, each requiring `scope` of its caller and handed the admitted key.
    func scoped(_ scope: RequireScope) -> ScopedRoutes<Self> {
        ScopedRoutes(parent: self, scope: scope)
    }

    /// A group of these routes that only the admin token may call.
    func adminTokenOnly() -> RouterGroup<AppRequestContext> {
        group().add(middleware: RequireAdminToken())
    }
}
