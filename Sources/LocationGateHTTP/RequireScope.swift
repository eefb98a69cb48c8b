import Hummingbird
import LocationGateService

/// What a route group requires of its caller, checked once for every route of the group
/// (SPEC §5): an app key with the ingest, read or admin scope (an admin key may do what the
/// others may) or with any scope, or the configuration's admin token, which only creates apps.
/// A caller without it is refused before any handler runs: 401 without a key, 403 with the
/// wrong scope (or the admin token where a key is needed, or a key where the admin token is).
/// An admitted key is handed to the group's handlers in the context
/// (`AppRequestContext.caller()`).
///
/// Only routes are in a scope group: the 405s of their paths are registered outside it
/// (`RouteTable`), so that a wrong method is a 405 whoever asks.
struct RequireScope: RouterMiddleware {
    typealias Context = AppRequestContext

    enum Caller: Sendable {
        /// An app key allowed `Requirement` (`AppRequestContext.require(_:)`).
        case key(Requirement)
        /// The configuration's admin token (`LOCGATE_ADMIN_TOKEN`).
        case adminToken
    }

    let caller: Caller
    /// What a caller the group does not admit is told instead of 403, when a route must not
    /// tell that what it names exists (an erasure's record is 404 to any key but the app's
    /// admin key); nil for the 403. A request without a key is 401 either way.
    var refusal: APIError? = nil

    /// Appending events: an ingest or admin key.
    static let ingest = RequireScope(caller: .key(.ingest))
    /// Gates, history, state, analytics, feeds, OFREP: a read or admin key.
    static let read = RequireScope(caller: .key(.read))
    /// Keys, features and the app's settings: an admin key.
    static let admin = RequireScope(caller: .key(.admin))
    /// Creating apps: the admin token alone.
    static let adminToken = RequireScope(caller: .adminToken)
    /// What any of the app's keys may ask (which app and scope it has): a key of any scope.
    static let anyKey = RequireScope(caller: .key(.anyKey))

    /// An admin key, every other caller with a key told `refusal` instead of 403.
    static func admin(otherwise refusal: APIError) -> RequireScope {
        RequireScope(caller: .key(.admin), refusal: refusal)
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            switch caller {
            case .key(let requirement):
                context.admitted = try context.require(requirement)
            case .adminToken:
                guard context.isAdminToken else {
                    if context.identity != nil { throw APIError(.forbidden, "only the admin token creates apps") }
                    throw APIError(.unauthorized, "the admin token is required (Authorization: Bearer TOKEN)")
                }
            }
        } catch {
            guard let refusal, (error as? APIError)?.error.code == .forbidden else { throw error }
            throw refusal
        }
        return try await next(request, context)
    }
}

extension RouterMethods where Context == AppRequestContext {
    /// A group of these routes whose every route requires `scope` of its caller.
    func scoped(_ scope: RequireScope) -> RouterGroup<AppRequestContext> {
        group().add(middleware: scope)
    }
}

extension AppRequestContext {
    /// A handler registered outside a scope group asked for the caller: a defect, answered 500
    /// (and logged with its route by `ErrorBodyMiddleware`).
    struct NoScopeGroup: Error, CustomStringConvertible {
        var description: String { "a handler that needs an app key is registered outside a RequireScope group" }
    }

    /// The app key the route's scope group admitted. Every handler that acts for an app is
    /// registered in a `RequireScope` group, which refuses the request before the handler
    /// runs unless the key has the scope; so this throws only for a handler registered
    /// outside one.
    func caller() throws -> APIIdentity {
        guard let admitted else { throw NoScopeGroup() }
        return admitted
    }
}
