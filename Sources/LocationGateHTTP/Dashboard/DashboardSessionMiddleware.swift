import Hummingbird
import LocationGateService

/// Signs the dashboard's pages in from their session cookie (SPEC §8): the session's key
/// becomes the request's identity, so that every page is scoped to that key's app and the
/// per-app rate limiter after it in the group charges the page as it charges the API. Without a
/// live session (none, unknown, idle for 12 hours, signed out, its key revoked) any address of
/// the group answers 303 to the sign-in form.
struct DashboardSessionMiddleware: RouterMiddleware {
    typealias Context = AppRequestContext

    let sessions: DashboardSessions

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let id = request.cookies[DashboardRoutes.cookieName]?.value, !id.isEmpty,
              let identity = try await sessions.identity(forSession: id),
              identity.scope == .read || identity.scope == .admin
        else {
            return DashboardRoutes.toSignIn()
        }
        context.identity = identity
        return try await next(request, context)
    }
}
