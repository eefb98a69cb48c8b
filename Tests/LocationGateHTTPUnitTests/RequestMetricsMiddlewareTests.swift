import HTTPTypes
import Hummingbird
import Logging
import MetricsTestKit
import NIOCore
import NIOEmbedded
import Testing

@testable import LocationGateHTTP

/// The request metrics keep Hummingbird's names and dimensions, and leave a whole body as it
/// is, so that Hummingbird writes head, body and end in one batch.
@Suite("HTTP: request metrics", .timeLimit(.minutes(1)))
struct RequestMetricsMiddlewareTests {
    private static let dimensions = [
        ("http.route", "Unknown"), ("http.request.method", "GET"), ("http.response.status_code", "200"),
    ]

    private static func request() -> Request {
        Request(head: HTTPRequest(method: .get, scheme: "http", authority: "localhost", path: "/x"), body: RequestBody(buffer: ByteBuffer()))
    }

    private static func context() -> BasicRequestContext {
        BasicRequestContext(source: .init(channel: EmbeddedChannel(), logger: Logger(label: "test")))
    }

    @Test("A whole body is counted when the handler returns, and left unwrapped")
    func wholeBody() async throws {
        let metrics = TestMetrics()
        let middleware = RequestMetricsMiddleware<BasicRequestContext>(factory: metrics)
        let response = try await middleware.handle(Self.request(), context: Self.context()) { _, _ in
            Response(status: .ok, body: ResponseBody(byteBuffer: ByteBuffer(string: #"{"hello":"world"}"#)))
        }
        // Counted before anything was written: the body was not wrapped in a closure that
        // counts after the write (which would split the write into three).
        #expect(try metrics.expectCounter("hb.requests", Self.dimensions).totalValue == 1)
        #expect(try metrics.expectTimer("http.server.request.duration", Self.dimensions).values.count == 1)
        #expect(try metrics.expectMeter("http.server.active_requests", [("http.request.method", "GET")]).lastValue == 0)
        let written = Written()
        try await response.body.write(CollectingWriter(written: written))
        #expect(written.text == #"{"hello":"world"}"#)
        #expect(try metrics.expectCounter("hb.requests", Self.dimensions).totalValue == 1)
    }

    @Test("A stream is counted after its last write, and is active until then")
    func streamedBody() async throws {
        let metrics = TestMetrics()
        let middleware = RequestMetricsMiddleware<BasicRequestContext>(factory: metrics)
        let response = try await middleware.handle(Self.request(), context: Self.context()) { _, _ in
            Response(status: .ok, body: ResponseBody { writer in
                try await writer.write(ByteBuffer(string: "data: 1\n\n"))
                // A slow stream: the duration must cover it (a lower bound, which load cannot break).
                try await Task.sleep(for: .milliseconds(50))
                try await writer.write(ByteBuffer(string: "data: 2\n\n"))
                try await writer.finish(nil)
            })
        }
        #expect(try metrics.expectCounter("hb.requests", Self.dimensions).totalValue == 0, "not counted before the stream ends")
        #expect(try metrics.expectMeter("http.server.active_requests", [("http.request.method", "GET")]).lastValue == 1)
        let written = Written()
        try await response.body.write(CollectingWriter(written: written))
        #expect(written.text == "data: 1\n\ndata: 2\n\n")
        #expect(try metrics.expectCounter("hb.requests", Self.dimensions).totalValue == 1)
        #expect(try metrics.expectMeter("http.server.active_requests", [("http.request.method", "GET")]).lastValue == 0)
        let duration = try #require(try metrics.expectTimer("http.server.request.duration", Self.dimensions).lastValue)
        #expect(duration >= 50_000_000, "the duration covers the stream")
    }

    @Test("A thrown error is counted with its status")
    func error() async throws {
        let metrics = TestMetrics()
        let middleware = RequestMetricsMiddleware<BasicRequestContext>(factory: metrics)
        await #expect(throws: HTTPError.self) {
            _ = try await middleware.handle(Self.request(), context: Self.context()) { _, _ in throw HTTPError(.notFound) }
        }
        let dimensions = [("http.route", "NotFound"), ("http.request.method", "GET"), ("error.type", "404")]
        #expect(try metrics.expectCounter("hb.request.errors", dimensions).totalValue == 1)
        #expect(try metrics.expectMeter("http.server.active_requests", [("http.request.method", "GET")]).lastValue == 0)
    }
}

/// What a response body wrote.
private final class Written: @unchecked Sendable {
    var buffer = ByteBuffer()
    var text: String { String(buffer: buffer) }
}

/// Collects what a response body writes (the body takes its writer by value).
private struct CollectingWriter: ResponseBodyWriter {
    let written: Written

    mutating func write(_ buffer: ByteBuffer) async throws {
        var buffer = buffer
        written.buffer.writeBuffer(&buffer)
    }

    consuming func finish(_ trailingHeaders: HTTPFields?) async throws {}
}
