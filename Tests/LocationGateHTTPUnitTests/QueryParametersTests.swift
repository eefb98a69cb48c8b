import HTTPTypes
import Hummingbird
import LocationGateService
import NIOCore
import Testing

@testable import LocationGateHTTP

/// SPEC §14: a query parameter given twice is a 400 `invalidRequest` naming it, whichever
/// route reads it; the reader of every route's query.
@Suite("HTTP: query parameters, each at most once", .timeLimit(.minutes(1)))
struct QueryParametersTests {
    private static func request(_ pathAndQuery: String) -> Request {
        Request(
            head: HTTPRequest(method: .get, scheme: "http", authority: "localhost", path: pathAndQuery),
            body: RequestBody(buffer: ByteBuffer()))
    }

    private static func refusal(_ pathAndQuery: String) -> ServiceError? {
        do throws(ServiceError) {
            _ = try QueryParameters(of: request(pathAndQuery))
            return nil
        } catch {
            return error
        }
    }

    @Test("Each parameter once: read by name, values percent-decoded as Hummingbird decodes them")
    func once() throws {
        let parameters = try QueryParameters(of: Self.request("/v1/analytics/prompts?from=2026-11-01&to=2026-11-30T10%3A00%3A00Z&groupBy=platform,week"))
        #expect(parameters["from"] == "2026-11-01")
        #expect(parameters.get("to") == "2026-11-30T10:00:00Z")
        #expect(parameters["groupBy"] == "platform,week")
        #expect(parameters["platform"] == nil && !parameters.has("platform"))
        #expect(parameters.names == ["from", "groupBy", "to"])
        let empty = try QueryParameters(of: Self.request("/v1/changes"))
        #expect(empty.names.isEmpty)
        let blank = try QueryParameters(of: Self.request("/v1/changes?from="))
        #expect(blank.has("from") && blank["from"] == "")
    }

    @Test("A parameter given twice is a 400 invalidRequest naming it, on any route, whatever the values")
    func repeated() {
        for (query, name) in [
            ("/v1/analytics/prompts?from=2026-11-01&from=2026-11-02", "from"),
            ("/v1/users/u/devices/d/history?limit=5&afterVersion=1&limit=5", "limit"),
            ("/v1/users/u/devices/d/state?asOf=2026-11-20T10:00:00Z&asOf=2026-11-20T10:00:00Z", "asOf"),
            ("/v1/audit?after=&after=x", "after"),
            ("/v1/changes?from=start&%66rom=start", "from"),
        ] {
            let error = Self.refusal(query)
            #expect(error?.code == .invalidRequest, "\(query)")
            #expect(error?.message.hasPrefix("\(name):") == true, "\(query): \(error?.message ?? "no error")")
        }
    }

    @Test("Segments without a name are ignored; different names never conflict")
    func namelessSegments() throws {
        let parameters = try QueryParameters(pairs: [("", "x"), ("", "y"), ("a", "1"), ("b", "1")])
        #expect(parameters.names == ["a", "b"])
        #expect(throws: ServiceError.self) { try QueryParameters(pairs: [("a", "1"), ("b", "2"), ("a", "1")]) }
    }
}
