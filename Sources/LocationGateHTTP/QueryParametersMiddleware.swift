import Hummingbird
import LocationGateService

/// SPEC §14: a query parameter given twice is a 400 `invalidRequest` naming it on every
/// address, whether or not the address reads it (`?limit=5&limit=500` must not mean whichever
/// a proxy or a cache keyed on), before authentication, and whatever the dashboard's session:
/// added to the router before every route, after the error bodies. Under `/ofrep/` the
/// refusal is OFREP's body with `INVALID_CONTEXT` (its query is the evaluation context of the
/// event streams); everywhere else SPEC §5's. The routes read their parameters through
/// `QueryParameters` too, which refuses the same.
struct QueryParametersMiddleware: RouterMiddleware {
    typealias Context = AppRequestContext

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        // Most requests (gates, appends) have no query: nothing to read.
        guard request.uri.query != nil else { return try await next(request, context) }
        do throws(ServiceError) {
            _ = try QueryParameters(of: request)
        } catch {
            if request.uri.path.hasPrefix("/ofrep/") {
                return OFREPError.response(.badRequest, key: context.parameters.get("key"), code: "INVALID_CONTEXT", details: error.message)
            }
            throw APIError(error)
        }
        return try await next(request, context)
    }
}
