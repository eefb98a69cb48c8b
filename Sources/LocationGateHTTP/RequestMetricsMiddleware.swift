import Dispatch
import Hummingbird
import Metrics
import Synchronization

/// Hummingbird's `MetricsMiddleware`, with the same metrics (`hb_requests`,
/// `http_server_request_duration`, `hb_request_errors`, `http_server_active_requests`, with the
/// same dimensions), recorded without giving up Hummingbird's fast path for whole bodies.
///
/// Hummingbird's records after the body is written by wrapping every body in a closure. A
/// body held in one buffer is then written as three parts (head, body, end), each its own
/// hand-off to the event loop and its own flush, where Hummingbird writes an unwrapped one in
/// a single batch. Every answer here but the push streams is one buffer, and under
/// single-event ingest the three flushes cost the server about 5 µs per request (`perf`: the
/// batched write of the same response took 11 µs against 16.6, plus the extra `write`
/// syscalls). So a body whose length is known is counted when the handler returns, and left
/// as it is; a body without one (the push streams) is wrapped as before, so that its duration
/// and the active-requests gauge cover the whole stream.
struct RequestMetricsMiddleware<Context: RequestContext>: RouterMiddleware {
    private let cache: RequestMetricsCache

    /// `factory` is the metrics system's unless a test gives its own.
    init(factory: any MetricsFactory = MetricsSystem.factory) {
        cache = RequestMetricsCache(factory: factory)
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let start = DispatchTime.now().uptimeNanoseconds
        let active = cache.activeRequests(method: request.method)
        active.increment()
        do {
            var response = try await next(request, context)
            let metrics = cache.endpoint(.init(endpoint: context.endpointPath ?? "Unknown", method: request.method, status: response.status))
            let record: @Sendable () -> Void = {
                metrics.counter.increment()
                metrics.timer.recordNanoseconds(DispatchTime.now().uptimeNanoseconds - start)
                active.decrement()
            }
            if response.body.contentLength != nil {
                record()
            } else {
                let body = response.body
                response.body = ResponseBody { writer in
                    defer { record() }
                    try await body.write(writer)
                }
            }
            return response
        } catch {
            let status = (error as? any HTTPResponseError)?.status ?? .internalServerError
            let metrics = cache.endpoint(.init(endpoint: context.endpointPath ?? "NotFound", method: request.method, status: status))
            metrics.counter.increment()
            metrics.errorCounter.increment()
            active.decrement()
            throw error
        }
    }
}

/// The metrics of each method and endpoint, made once (the metrics factory's own lookup by
/// label and dimensions costs more than a dictionary).
private final class RequestMetricsCache: Sendable {
    struct EndpointID: Hashable {
        var endpoint: String
        var method: HTTPRequest.Method
        var status: HTTPResponse.Status
    }

    struct EndpointMetrics: Sendable {
        var counter: Counter
        var timer: Metrics.Timer
        var errorCounter: Counter

        init(_ id: EndpointID, factory: any MetricsFactory) {
            let dimensions = [
                ("http.route", id.endpoint), ("http.request.method", id.method.description),
                ("http.response.status_code", id.status.code.description),
            ]
            counter = Counter(label: "hb.requests", dimensions: dimensions, factory: factory)
            timer = Metrics.Timer(
                label: "http.server.request.duration", dimensions: dimensions, preferredDisplayUnit: .seconds, factory: factory)
            errorCounter = Counter(
                label: "hb.request.errors",
                dimensions: [
                    ("http.route", id.endpoint), ("http.request.method", id.method.description),
                    ("error.type", id.status.code.description),
                ],
                factory: factory)
        }
    }

    private let factory: any MetricsFactory
    private let methods = Mutex<[HTTPRequest.Method: Meter]>([:])
    private let endpoints = Mutex<[EndpointID: EndpointMetrics]>([:])

    init(factory: any MetricsFactory) {
        self.factory = factory
    }

    func activeRequests(method: HTTPRequest.Method) -> Meter {
        methods.withLock { methods in
            if let meter = methods[method] { return meter }
            let meter = Meter(label: "http.server.active_requests", dimensions: [("http.request.method", method.description)], factory: factory)
            methods[method] = meter
            return meter
        }
    }

    func endpoint(_ id: EndpointID) -> EndpointMetrics {
        endpoints.withLock { endpoints in
            if let metrics = endpoints[id] { return metrics }
            let metrics = EndpointMetrics(id, factory: factory)
            endpoints[id] = metrics
            return metrics
        }
    }
}
