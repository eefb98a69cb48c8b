import HTTPTypes
import Hummingbird
import NIOCore
import Testing

@testable import LocationGateHTTP

@Suite("API keys are read from Authorization: Bearer or X-API-Key", .timeLimit(.minutes(1)))
struct AuthenticationTokenTests {
    static func request(_ fields: HTTPFields) -> Request {
        Request(
            head: HTTPRequest(method: .get, scheme: "http", authority: "localhost", path: "/", headerFields: fields),
            body: RequestBody(buffer: ByteBuffer()))
    }

    @Test("The scheme in any case, blanks around the key, the key header as a fallback")
    func tokens() throws {
        let apiKeyHeader = try #require(HTTPField.Name("X-API-Key"))
        let cases: [(HTTPFields, String?)] = [
            ([.authorization: "Bearer lg_key"], "lg_key"),
            ([.authorization: "bearer lg_key"], "lg_key"),
            ([.authorization: "BEARER   lg_key \t"], "lg_key"),
            ([.authorization: "Bearer "], nil),
            ([.authorization: "Bearer"], nil),
            ([.authorization: "Bearer\tlg_key"], nil),
            ([.authorization: "Basic dXNlcjpwYXNz"], nil),
            ([.authorization: "Bearerlg_key"], nil),
            ([apiKeyHeader: " lg_other "], "lg_other"),
            ([.authorization: "Basic x", apiKeyHeader: "lg_other"], "lg_other"),
            ([:], nil),
        ]
        for (fields, expected) in cases {
            #expect(AuthenticationMiddleware.token(in: Self.request(fields)).map(String.init) == expected, "\(fields)")
        }
    }

    @Test("Two Authorization fields are read joined, as HTTP joins them, which no key survives")
    func twoFields() {
        var fields = HTTPFields()
        fields.append(HTTPField(name: .authorization, value: "Bearer lg_first"))
        fields.append(HTTPField(name: .authorization, value: "Bearer lg_second"))
        #expect(AuthenticationMiddleware.token(in: Self.request(fields)).map(String.init) == "lg_first, Bearer lg_second")
    }
}
