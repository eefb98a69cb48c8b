import Foundation
import HTTPTypes
import Hummingbird
import LocationGateJSON
import LocationGateService

/// OFREP's own error bodies: `{"key", "errorCode", "errorDetails"}`.
enum OFREPError {
    /// An OFREP-specific failure (context, parse, unknown flag), answered with its own code.
    struct Failure: Error {
        var code: String
        var details: String
        var status: HTTPResponse.Status = .badRequest
    }

    /// OFREP's error code for one of ours: OFREP names context and parse errors; everything
    /// else (auth, limits, outages) is GENERAL with the HTTP status telling which.
    static func code(for code: ServiceError.Code) -> String {
        switch code {
        case .malformedJSON: "PARSE_ERROR"
        case .notFound: "FLAG_NOT_FOUND"
        default: "GENERAL"
        }
    }

    /// The body, with `status`; `key` is the flag of the path (`:key`), when it has one.
    static func response(_ status: HTTPResponse.Status, key: String?, code: String, details: String) -> Response {
        var writer = JSONWriter()
        writer.objectStart()
        writer.field("errorCode", code)
        writer.field("errorDetails", details)
        writer.fieldIfPresent("key", key)
        writer.objectEnd()
        return PreparedBody(status: status, json: writer.bytes).response
    }
}
