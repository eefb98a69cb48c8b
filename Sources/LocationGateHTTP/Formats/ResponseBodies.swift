import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// The API's JSON answers: a handler returns an `Encodable` value (`ResponseEncodable`) and
/// the context's `responseEncoder`, this one, writes it. Keys are sorted, so that equal values
/// give equal bytes (and equal ETags), and `/` is not escaped. The content type is
/// `application/json`, as every answer of the API has had it.
public struct SortedJSONEncoder: ResponseEncoder {
    public init() {}

    public func encode(_ value: some Encodable, from request: Request, context: some RequestContext) throws -> Response {
        try response(.ok, value)
    }

    /// `value` as JSON with `status`, for answers made outside a handler (error bodies).
    func response(_ status: HTTPResponse.Status, _ value: some Encodable) throws -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return PreparedBody(status: status, json: try encoder.encode(value)).response
    }
}

/// A body written before the handler returns: JSON that `JSONWriter` wrote where a hot path
/// needs it (a gate, an append, a page of history, OFREP's evaluations), or text in another
/// format (CSV, Prometheus's). Copied once into the response's buffer.
struct PreparedBody: ResponseGenerator {
    var status: HTTPResponse.Status = .ok
    var headers: HTTPFields = [:]
    let buffer: ByteBuffer

    /// JSON bytes, as `application/json`.
    init(status: HTTPResponse.Status = .ok, json bytes: some Sequence<UInt8>, headers: HTTPFields = [:]) {
        self.init(status: status, bytes: bytes, contentType: "application/json", headers: headers)
    }

    /// Bytes of `contentType`.
    init(status: HTTPResponse.Status = .ok, bytes: some Sequence<UInt8>, contentType: String, headers: HTTPFields = [:]) {
        self.status = status
        var fields = headers
        fields[.contentType] = contentType
        self.headers = fields
        self.buffer = ByteBuffer(bytes: bytes)
    }

    var response: Response {
        Response(status: status, headers: headers, body: ResponseBody(byteBuffer: buffer))
    }

    func response(from request: Request, context: some RequestContext) throws -> Response { response }
}
