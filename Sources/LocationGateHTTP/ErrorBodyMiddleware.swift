import Hummingbird
import LocationGateService
import Logging

/// Gives every error the SPEC §5 JSON body (OFREP's under `/ofrep/`): the router's own
/// not-found (an unknown path is 404 `notFound`), Hummingbird's `HTTPError`s, and anything
/// unexpected, which is a defect: logged, and answered 500 `internalError` without details.
/// Added first, so that it wraps every route and the not-found responder.
struct ErrorBodyMiddleware: RouterMiddleware {
    typealias Context = AppRequestContext

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as APIError {
            throw error
        } catch let error as HTTPError {
            throw APIError(Self.code(for: error.status), error.body ?? Self.message(for: error.status))
        } catch {
            context.logger.error("request failed", metadata: ["error": "\(String(reflecting: error))", "path": "\(request.uri.path)"])
            throw APIError(ServiceError.from(error))
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
