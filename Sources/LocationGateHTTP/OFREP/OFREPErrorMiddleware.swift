import Hummingbird
import LocationGateService

/// OFREP clients read OFREP's error bodies (`{"key", "errorCode", "errorDetails"}`), whatever
/// failed: this middleware sits on the `/ofrep/v1` group and turns every error of its routes,
/// their 404s and 405s included, into that form, keeping the status and headers (Retry-After,
/// Allow) SPEC §5's form would carry.
struct OFREPErrorMiddleware: RouterMiddleware {
    typealias Context = AppRequestContext

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let failure as OFREPError.Failure {
            return OFREPError.response(failure.status, key: context.parameters.get("key"), code: failure.code, details: failure.details)
        } catch {
            let api = ErrorBodyMiddleware.apiError(error, request: request, context: context)
            let key = context.parameters.get("key")
            var response = OFREPError.response(
                api.status, key: key, code: OFREPError.code(for: api.error.code), details: api.error.message)
            if let retryAfter = api.retryAfter { response.headers[.retryAfter] = String(retryAfter) }
            for field in api.headers { response.headers.append(field) }
            return response
        }
    }
}
