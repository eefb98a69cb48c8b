import Foundation
import HTTPTypes
import Hummingbird
import LocationGateService
import Logging
import NIOCore
import NIOEmbedded
import Synchronization
import Testing

@testable import LocationGateHTTP

/// `locgate serve --access-log` (SPEC §14): one JSON line per request with the method, the
/// route template, the status, the duration and the app id (lower case, as the API writes
/// ids), never a user or device id.
@Suite("HTTP: the access log", .timeLimit(.minutes(1)))
struct AccessLogMiddlewareTests {
    /// The lines written, in order.
    final class Lines: Sendable {
        private let lines = Mutex<[String]>([])
        func append(_ line: String) { lines.withLock { $0.append(line) } }
        var all: [String] { lines.withLock { $0 } }
        /// Each line parsed as a JSON object.
        var objects: [[String: Any]] {
            all.map { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] ?? [:] }
        }
    }

    private static let path = "/v1/users/u-4711/devices/d-0815/gates"
    private static let template = "/v1/users/:user/devices/:device/gates"

    private static func request(_ method: HTTPRequest.Method = .get, path: String = path) -> Request {
        Request(head: HTTPRequest(method: method, scheme: "http", authority: "localhost", path: path), body: RequestBody(buffer: ByteBuffer()))
    }

    /// A context as the router makes it, with the route it matched.
    private static func context(route: String?) -> AppRequestContext {
        let context = AppRequestContext(source: .init(channel: EmbeddedChannel(), logger: Logger(label: "test")))
        context.coreContext.endpointPath.value = route
        return context
    }

    @Test("One line per answer: method, route template, status, duration and the app found further in, in lower case")
    func answered() async throws {
        let lines = Lines()
        let middleware = AccessLogMiddleware(write: { lines.append($0) })
        let appID = UUID()
        let response = try await middleware.handle(Self.request(), context: Self.context(route: Self.template)) { _, context in
            // The key middleware of a route group sets the identity on a copy of the context.
            let inner = context
            inner.identity = APIIdentity(keyID: UUID(), appID: appID, scope: .read)
            #expect(inner.identity?.appID == appID)
            return Response(status: .ok, body: ResponseBody(byteBuffer: ByteBuffer(string: #"{"status":"notDetermined"}"#)))
        }
        #expect(response.status == .ok)
        #expect(lines.all.count == 1)
        let line = try #require(lines.objects.first)
        #expect(line["method"] as? String == "GET")
        #expect(line["route"] as? String == Self.template)
        #expect(line["status"] as? Int == 200)
        #expect(line["appId"] as? String == appID.uuidString.lowercased())
        #expect((line["durationMs"] as? Double).map { $0 >= 0 } == true)
        #expect((line["time"] as? String).flatMap { RFC3339Check.date($0) } != nil)
        #expect(Set(line.keys) == ["appId", "durationMs", "method", "route", "status", "time"])
        for text in lines.all {
            #expect(!text.contains("u-4711") && !text.contains("d-0815"), "a user or device id in the access log: \(text)")
            #expect(!text.contains("\n"))
        }
    }

    @Test("An error is logged with its status; a path no route matched has a null route; no key, a null app")
    func errors() async throws {
        let lines = Lines()
        let middleware = AccessLogMiddleware(write: { lines.append($0) })
        await #expect(throws: APIError.self) {
            _ = try await middleware.handle(Self.request(.post, path: "/v1/events"), context: Self.context(route: "/v1/events")) { _, _ in
                throw APIError(.unauthorized, "a valid API key is required")
            }
        }
        await #expect(throws: HTTPError.self) {
            _ = try await middleware.handle(Self.request(path: "/v1/users/u-4711/nothing"), context: Self.context(route: nil)) { _, context in
                context.coreContext.endpointPath.value = "NotFound"
                throw HTTPError(.notFound)
            }
        }
        let objects = lines.objects
        #expect(objects.count == 2)
        #expect(objects.first?["status"] as? Int == 401 && objects.first?["route"] as? String == "/v1/events")
        #expect(objects.first?["method"] as? String == "POST")
        #expect(objects.first?["appId"] is NSNull)
        #expect(objects.last?["status"] as? Int == 404 && objects.last?["route"] is NSNull)
        #expect(lines.all.allSatisfy { !$0.contains("u-4711") })
    }

    @Test("A key found before a refusal is logged with the refusal: a 403 names the app of the key that was refused")
    func refusedKey() async throws {
        let lines = Lines()
        let middleware = AccessLogMiddleware(write: { lines.append($0) })
        let appID = UUID()
        await #expect(throws: APIError.self) {
            _ = try await middleware.handle(Self.request(.post, path: "/v1/events"), context: Self.context(route: "/v1/events")) { _, context in
                context.identity = APIIdentity(keyID: UUID(), appID: appID, scope: .read)
                throw APIError(.forbidden, "a key with scope read may not do this")
            }
        }
        let line = try #require(lines.objects.first)
        #expect(line["status"] as? Int == 403)
        #expect(line["appId"] as? String == appID.uuidString.lowercased())
    }

    @Test("A push stream is logged when it ends, its duration covering it, with the app of its key")
    func stream() async throws {
        let lines = Lines()
        let middleware = AccessLogMiddleware(write: { lines.append($0) })
        let appID = UUID()
        let response = try await middleware.handle(Self.request(path: "/v1/changes"), context: Self.context(route: "/v1/changes")) { _, context in
            context.identity = APIIdentity(keyID: UUID(), appID: appID, scope: .read)
            return Response(status: .ok, body: ResponseBody { writer in
                try await writer.write(ByteBuffer(string: "data: 1\n\n"))
                try await Task.sleep(for: .milliseconds(50))
                try await writer.finish(nil)
            })
        }
        #expect(lines.all.isEmpty, "not logged before the stream ends")
        try await response.body.write(DiscardingWriter())
        let line = try #require(lines.objects.first)
        #expect(line["route"] as? String == "/v1/changes" && line["status"] as? Int == 200)
        #expect((line["durationMs"] as? Double).map { $0 >= 50 } == true, "\(line)")
        #expect(line["appId"] as? String == appID.uuidString.lowercased())
    }

    @Test("A line is the same JSON whatever is in it: ids in lower case, keys in byte order")
    func lineShape() throws {
        let appID = try #require(UUID(uuidString: "0B3F5C6E-2A1D-4C7E-9B8F-3D2E1F0A9C8B"))
        let line = AccessLogMiddleware.line(
            time: Date(timeIntervalSince1970: 1_795_341_600), method: "GET", route: "/v1/features", status: 200,
            nanoseconds: 1_234_567, appID: appID)
        #expect(line == #"{"appId":"0b3f5c6e-2a1d-4c7e-9b8f-3d2e1f0a9c8b","durationMs":1.234,"method":"GET","route":"/v1/features","status":200,"time":"2026-11-22T10:00:00.000Z"}"#)
    }
}

/// RFC 3339 as the access log writes it.
private enum RFC3339Check {
    static func date(_ text: String) -> Date? {
        try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }
}

/// A response body writer that keeps nothing.
private struct DiscardingWriter: ResponseBodyWriter {
    mutating func write(_ buffer: ByteBuffer) async throws {}
    consuming func finish(_ trailingHeaders: HTTPFields?) async throws {}
}
