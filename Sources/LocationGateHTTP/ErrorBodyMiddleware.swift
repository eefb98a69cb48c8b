import Hummingbird
import LocationGateService
import Logging

/// Gives every error the SPEC §5 JSON body (the OFREP group turns them into OFREP's bodies
/// first, see `OFREPErrorMiddleware`): the router's own
/// not-found (an unknown path is 404 `notFound`), Hummingbird's `HTTPError`s, and anything
/// unexpected, which is a defect: logged, and answered 500 `internalError` without details.
/// Added first, so that it wraps every route and the not-found responder.
struct ErrorBodyMiddleware: RouterMiddleware {
    typealias Context = AppRequestContext

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch {
            throw Self.apiError(error, request: request, context: context)
        }
    }

    /// Any error as SPEC §5's: a defect (anything that is not the client's or the database's
    /// availability) is logged here, once, with its details.
    static func apiError(_ error: any Error, request: Request, context: Context) -> APIError {
        switch error {
        case let error as APIError: return error
        case let error as HTTPError:
            return APIError(Self.code(for: error.status), error.body ?? Self.message(for: error.status))
        default:
            let service = ServiceError.from(error)
            if service.code == .internalError {
                context.logger.error("request failed", metadata: ["error": "\(String(reflecting: error))", "route": "\(context.endpointPath ?? "unmatched")"])
            }
            return APIError(service)
        }
    }

    /// The code `apiError` answers an error with, without logging it (for counting).
    static func code(of error: any Error) -> ServiceError.Code {
        switch error {
        case let error as APIError: error.error.code
        case let error as HTTPError: code(for: error.status)
        default: ServiceError.from(error).code
        }
    }

    static func code(for status: HTTPResponse.Status) -> ServiceError.Code {
        switch status {
        case .notFound: .notFound
        case .methodNotAllowed: .methodNotAllowed
        case .contentTooLarge: .tooLarge
        case .badRequest: .invalidRequest
        case .unauthorized: .unauthorized
        case .forbidden: .forbidden
        case .serviceUnavailable: .databaseUnavailable
        default: .internalError
        }
    }

    static func message(for status: HTTPResponse.Status) -> String {
        switch status {
        case .notFound: "no such resource"
        case .methodNotAllowed: "method not allowed"
        default: status.reasonPhrase
        }
    }
}
