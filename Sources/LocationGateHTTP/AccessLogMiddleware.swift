import Dispatch
import Foundation
import Hummingbird
import LocationAuthorization
import LocationGateJSON
import LocationGateService

/// `locgate serve --access-log` (SPEC §14 "Observability"): one JSON line per request on
/// standard error, when its answer is complete:
///
///     {"appId":"0b3f5c6e-…","durationMs":1.42,"method":"GET","route":"/v1/users/:user/devices/:device/gates","status":200,"time":"2026-11-22T10:00:05.123Z"}
///
/// `route` is the matched route template (null when no route matched), never the path: paths
/// hold user and device ids, which no log line carries. `appId` is the app of the key (or the
/// dashboard session) behind the request, as the API writes ids (lower case), or null. `time`
/// is when the request arrived; `durationMs` runs until the handler returned an answer of
/// known length, or until a push stream ended. Keys are in byte order.
///
/// Added first, outside `ErrorBodyMiddleware`, so that it sees the status of every answer,
/// errors and unmatched paths included. The app is found further in (by the key middleware of
/// a route group, or the dashboard's session middleware): it reaches this middleware through
/// the facts every copy of the request's context shares (`AppRequestContext.identity`), read
/// once the handler has answered or failed.
struct AccessLogMiddleware: RouterMiddleware {
    typealias Context = AppRequestContext

    /// Where each line goes (without its newline).
    private let write: @Sendable (String) -> Void

    /// `write` is standard error unless a test collects the lines.
    init(write: @escaping @Sendable (String) -> Void = AccessLogMiddleware.standardError) {
        self.write = write
    }

    /// One `write(2)` per line: lines from concurrent requests never interleave.
    static let standardError: @Sendable (String) -> Void = { line in
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let arrived = Date()
        let start = DispatchTime.now().uptimeNanoseconds
        let method = request.method.rawValue
        let write = self.write
        do {
            var response = try await next(request, context)
            let status = response.status.code
            let route = Self.route(context.endpointPath)
            let appID = context.identity?.appID
            let finish: @Sendable () -> Void = {
                let elapsed = DispatchTime.now().uptimeNanoseconds &- start
                write(Self.line(
                    time: arrived, method: method, route: route, status: status, nanoseconds: elapsed, appID: appID))
            }
            if response.body.contentLength != nil {
                finish()
            } else {
                let body = response.body
                response.body = ResponseBody { writer in
                    defer { finish() }
                    try await body.write(writer)
                }
            }
            return response
        } catch {
            let status = (error as? any HTTPResponseError)?.status.code ?? 500
            let elapsed = DispatchTime.now().uptimeNanoseconds &- start
            write(Self.line(
                time: arrived, method: method, route: Self.route(context.endpointPath), status: status, nanoseconds: elapsed,
                appID: context.identity?.appID))
            throw error
        }
    }

    /// The matched route template; nil when none matched (Hummingbird's own `NotFound`).
    static func route(_ endpointPath: String?) -> String? {
        guard let endpointPath, endpointPath != "NotFound" else { return nil }
        return endpointPath
    }

    /// One line of the log, keys in byte order.
    static func line(time: Date, method: String, route: String?, status: Int, nanoseconds: UInt64, appID: UUID?) -> String {
        var writer = JSONWriter(capacity: 192)
        writer.objectStart()
        writer.key("appId")
        if let appID { writer.string(appID.uuidString.lowercased()) } else { writer.null() }
        writer.key("durationMs")
        // Microseconds are enough, and keep the number short.
        writer.number(Double(nanoseconds / 1_000) / 1_000)
        writer.field("method", method)
        writer.key("route")
        if let route { writer.string(route) } else { writer.null() }
        writer.field("status", status)
        writer.field("time", RFC3339.string(from: time))
        writer.objectEnd()
        return writer.text
    }
}
