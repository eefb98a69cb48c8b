import Foundation
import HTTPTypes
import Hummingbird
import LocationAuthorization
import LocationGateJSON
import LocationGateService

/// OpenFeature Remote Evaluation Protocol (OFREP 0.3), for read and admin keys: each feature is
/// a boolean flag, each experiment (SPEC §16) a string flag whose value is the variant's key.
/// `targetingKey` is the user id; `deviceId` in the context picks one device, without it a
/// feature is evaluated at the user level (enabled when any device enables it) and an
/// experiment answers its control (or winner) and exposes no one. The evaluations and their
/// ETag are `OFREPFlags` (the service's OFREP and experiments faces); this reads the context
/// and writes the answers.
struct OFREPRoutes {
    let flags: OFREPFlags
    let streams: StreamRegistry

    /// Mounted under the `/ofrep/v1` area, whose `OFREPErrorMiddleware` gives every error
    /// (these handlers throw like any other) OFREP's body.
    var collection: RouteCollection<AppRequestContext> {
        let routes = RouteCollection(context: AppRequestContext.self)
        let read = routes.scoped(.read)
        read.post("/evaluate/flags/:key", use: evaluateFlag)
        read.post("/evaluate/flags", use: evaluateFlags)
        return routes
    }

    @Sendable func evaluateFlag(_ request: Request, context: AppRequestContext, caller: APIIdentity) async throws -> PreparedBody {
        let flag = context.parameters.get("key") ?? ""
        var request = request
        let target = try await Self.target(from: &request)
        guard let evaluation = try await flags.evaluateFlag(appID: caller.appID, key: flag, target: target) else {
            throw OFREPError.Failure(code: "FLAG_NOT_FOUND", details: "no flag \(flag.prefix(128))", status: .notFound)
        }
        var writer = JSONWriter()
        evaluation.write(to: &writer)
        return PreparedBody(json: writer.bytes)
    }

    /// The bulk evaluation with its ETag, or 304 when `If-None-Match` names it.
    @Sendable func evaluateFlags(_ request: Request, context: AppRequestContext, caller: APIIdentity) async throws -> Response {
        var request = request
        let target = try await Self.target(from: &request)
        let bulk = try await flags.evaluateFlags(appID: caller.appID, target: target)
        if let match = request.headers[.ifNoneMatch], match.split(separator: ",").contains(where: { $0.trimmingCharacters(in: .whitespaces) == bulk.etag }) {
            return Response(status: .notModified, headers: [.eTag: bulk.etag])
        }
        // ADR-0008: where to listen for changes instead of polling (SPEC §5). The body is the
        // bulk evaluation with `eventStreams` beside `flags`, keys in byte order as in every
        // body; the ETag stays the hash of the evaluation alone, which the stream compares.
        var writer = JSONWriter(capacity: 256 + (bulk.features.count + bulk.experiments.count) * 160)
        writer.objectStart()
        writer.key("eventStreams")
        writer.arrayStart()
        writer.objectStart()
        writer.field("inactivityDelaySec", Int(streams.inactivity.components.seconds))
        writer.field("type", "sse")
        writer.field("url", Self.streamURL(request: request, target: target))
        writer.objectEnd()
        writer.arrayEnd()
        writer.key("flags")
        bulk.writeFlags(to: &writer)
        writer.objectEnd()
        return PreparedBody(json: writer.bytes, headers: [.eTag: bulk.etag]).response
    }

    static let forwardedProto = HTTPField.Name("X-Forwarded-Proto")

    /// The event stream of a context, on the host the client used.
    static func streamURL(request: Request, target: OFREPTarget) -> String {
        var components = URLComponents()
        components.path = "/ofrep/v1/event-streams"
        components.queryItems = [URLQueryItem(name: "targetingKey", value: target.userID)]
            + (target.deviceID.map { [URLQueryItem(name: "deviceId", value: $0)] } ?? [])
        let scheme = forwardedProto.flatMap { request.headers[$0] } == "https" ? "https" : "http"
        let host = request.head.authority ?? "127.0.0.1"
        return "\(scheme)://\(host)\(components.string ?? components.path)"
    }

    /// Reads `{"context": {"targetingKey", "deviceId"}}` (an empty body is `{}`): UTF-8 JSON,
    /// an object. An object anywhere in the body that names a member twice is refused, naming
    /// it (SPEC §14, RFC 7493): `INVALID_CONTEXT` inside `context`, `PARSE_ERROR` elsewhere.
    static func target(from request: inout Request) async throws -> OFREPTarget {
        let data: Data
        do {
            data = try await request.bodyData(limit: 64 * 1024)
        } catch {
            throw OFREPError.Failure(code: "GENERAL", details: "the body is larger than 64 KiB", status: .contentTooLarge)
        }
        guard let text = data.isEmpty ? "{}" : String(data: data, encoding: .utf8) else {
            throw OFREPError.Failure(code: "PARSE_ERROR", details: "the body is not a JSON object")
        }
        let root: JSONNode
        do throws(JSONNode.ParseError) {
            root = try JSONNode.parseStrictly(bytes: Array(text.utf8))
        } catch {
            guard case .repeatedName(let path) = error else {
                throw OFREPError.Failure(code: "PARSE_ERROR", details: ClientJSON.refusal(error).message)
            }
            let inContext = path.steps.count > 1 && path.steps[0] == .member("context")
            throw OFREPError.Failure(code: inContext ? "INVALID_CONTEXT" : "PARSE_ERROR", details: ClientJSON.refusal(error).message)
        }
        guard case .object = root else {
            throw OFREPError.Failure(code: "PARSE_ERROR", details: "the body is not a JSON object")
        }
        guard let context = root["context"] else {
            throw OFREPError.Failure(code: "TARGETING_KEY_MISSING", details: "context.targetingKey (the user id) is required")
        }
        guard case .object = context else {
            throw OFREPError.Failure(code: "INVALID_CONTEXT", details: "context must be an object")
        }
        guard let rawKey = context["targetingKey"] else {
            throw OFREPError.Failure(code: "TARGETING_KEY_MISSING", details: "context.targetingKey (the user id) is required")
        }
        guard let userID = rawKey.string, EventSubmission.isValidIdentifier(userID) else {
            throw OFREPError.Failure(code: "INVALID_CONTEXT", details: "targetingKey must be \(EventSubmission.identifierRule)")
        }
        var deviceID: String?
        if let rawDevice = context["deviceId"] {
            guard let device = rawDevice.string, EventSubmission.isValidIdentifier(device) else {
                throw OFREPError.Failure(code: "INVALID_CONTEXT", details: "deviceId must be \(EventSubmission.identifierRule)")
            }
            deviceID = device
        }
        return OFREPTarget(userID: userID, deviceID: deviceID)
    }
}
