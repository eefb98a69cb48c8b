import Foundation
import Hummingbird
import LocationGateService

/// A `ServiceError` as HTTP: the one place codes become statuses (SPEC §5), with the body
/// `{"error": {"code", "message", "index"}}`.
struct APIError: HTTPResponseError {
    var error: ServiceError
    var retryAfter: Int?
    /// Headers the answer carries besides Retry-After (`Allow` with a 405).
    var headers: HTTPFields = [:]

    /// 503s carry `Retry-After: 1` unless told otherwise: an outage or a full queue is worth
    /// retrying soon, and a client with no hint would retry at once.
    init(_ error: ServiceError, retryAfter: Int? = nil) {
        self.error = error
        self.retryAfter = retryAfter ?? (error.isRetryable || error.code == .rateLimited ? 1 : nil)
    }

    init(_ code: ServiceError.Code, _ message: String, index: Int? = nil) {
        self.init(ServiceError(code, message, index: index))
    }

    var status: HTTPResponse.Status {
        switch error.code {
        case .malformedJSON, .invalidRequest: .badRequest
        case .unauthorized: .unauthorized
        case .forbidden: .forbidden
        case .notFound: .notFound
        case .methodNotAllowed: .methodNotAllowed
        case .versionConflict, .idConflict, .lastAdminKey, .keyInUse, .experimentRunning, .experimentStopped: .conflict
        case .tooLarge: .contentTooLarge
        case .validationFailed, .ruleViolation: .unprocessableContent
        case .rateLimited: .tooManyRequests
        case .databaseUnavailable, .overloaded: .serviceUnavailable
        case .internalError: .internalServerError
        }
    }

    private struct Body: Encodable {
        struct Detail: Encodable {
            var code: String
            var message: String
            var index: Int?
        }

        var error: Detail
    }

    func response(from request: Request, context: some RequestContext) throws -> Response {
        var response = try SortedJSONEncoder().response(
            status, Body(error: .init(code: error.code.rawValue, message: error.message, index: error.index)))
        if let retryAfter { response.headers[.retryAfter] = String(retryAfter) }
        for field in headers { response.headers.append(field) }
        return response
    }
}

/// A service error thrown from a handler is answered as SPEC §5 says, without a wrapper at
/// each call: the routes throw what the service throws.
extension ServiceError: HTTPResponseError {
    public var status: HTTPResponse.Status { APIError(self).status }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        try APIError(self).response(from: request, context: context)
    }
}

extension Request {
    /// The body, at most `limit` bytes: more is a 413 `tooLarge`.
    mutating func bodyData(limit: Int) async throws -> Data {
        let buffer: ByteBuffer
        do {
            buffer = try await collectBody(upTo: limit)
        } catch {
            throw APIError(.tooLarge, "the body is larger than \(limit) bytes")
        }
        return Data(buffer.readableBytesView)
    }
}
