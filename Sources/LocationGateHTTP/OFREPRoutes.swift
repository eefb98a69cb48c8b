import EventLog
import Foundation
import HTTPTypes
import Hummingbird
import LocationAuthorization
import LocationGateJSON
import LocationGateService

/// OpenFeature Remote Evaluation Protocol (OFREP 0.3): each feature is a boolean flag.
/// `targetingKey` is the user id; `deviceId` in the context picks one device, without it the
/// flag is evaluated at the user level (enabled when any device enables it).
struct OFREPRoutes {
    let service: GateService
    let streams: StreamRegistry

    /// Registers on the `/ofrep/v1` group, whose `OFREPErrorMiddleware` gives every error
    /// (these handlers throw like any other) OFREP's body.
    func register(on routes: RouteTable) {
        routes.post("/ofrep/v1/evaluate/flags/:key", use: evaluateFlag)
        routes.post("/ofrep/v1/evaluate/flags", use: evaluateFlags)
    }

    /// One flag's evaluation, written by hand (`write(to:)`) with its keys in byte order.
    struct Evaluation: Sendable {
        var key: String
        var value: Bool
        var reason: String
        /// The gate's status, reason and action, by name.
        var metadata: [(name: String, value: String)]

        var variant: String { value ? "enabled" : "disabled" }

        func write(to writer: inout JSONWriter) {
            writer.objectStart()
            writer.field("key", key)
            writer.key("metadata")
            writer.objectStart()
            for item in metadata.sorted(by: { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }) {
                writer.key(item.name)
                writer.string(item.value)
            }
            writer.objectEnd()
            writer.field("reason", reason)
            writer.field("value", value)
            writer.field("variant", variant)
            writer.objectEnd()
        }
    }

    struct Target: Sendable {
        var userID: String
        var deviceID: String?
    }

    @Sendable func evaluateFlag(_ request: Request, context: AppRequestContext) async throws -> Response {
        let flag = context.parameters.get("key") ?? ""
        let identity = try context.require(.read)
        var request = request
        let target = try await Self.target(from: &request)
        guard let feature = try await service.features.feature(appID: identity.appID, key: flag) else {
            throw ContextFailure(code: "FLAG_NOT_FOUND", details: "no flag \(flag.prefix(128))", status: .notFound)
        }
        let states = try await states(appID: identity.appID, target: target)
        var writer = JSONWriter()
        evaluate(feature, target: target, states: states).write(to: &writer)
        return JSONResponse.make(.ok, data: Data(writer.bytes))
    }

    @Sendable func evaluateFlags(_ request: Request, context: AppRequestContext) async throws -> Response {
        let identity = try context.require(.read)
        var request = request
        let target = try await Self.target(from: &request)
        let bulk = try await bulkEvaluation(appID: identity.appID, target: target)
        if let match = request.headers[.ifNoneMatch], match.split(separator: ",").contains(where: { $0.trimmingCharacters(in: .whitespaces) == bulk.etag }) {
            return Response(status: .notModified, headers: [.eTag: bulk.etag])
        }
        // ADR-0008: where to listen for changes instead of polling (SPEC §5). The body is the
        // bulk evaluation with `eventStreams` beside `flags`, keys in byte order as in every
        // body; the ETag stays the hash of the evaluation alone, which the stream compares.
        var writer = JSONWriter(capacity: bulk.data.count + 256)
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
        Self.writeFlags(bulk.flags, to: &writer)
        writer.objectEnd()
        return JSONResponse.make(.ok, data: Data(writer.bytes), headers: [.eTag: bulk.etag])
    }

    /// Every flag for the target, `{"flags": [...]}`, and the ETag of exactly those bytes (the
    /// event stream compares it): the same content always gives the same bytes.
    func bulkEvaluation(appID: UUID, target: Target) async throws -> (data: [UInt8], etag: String, flags: [Evaluation]) {
        let features = try await service.features.features(appID: appID)
        let states = try await states(appID: appID, target: target)
        let flags = features.map { evaluate($0, target: target, states: states) }
        var writer = JSONWriter(capacity: 64 + flags.count * 160)
        writer.objectStart()
        writer.key("flags")
        Self.writeFlags(flags, to: &writer)
        writer.objectEnd()
        return (writer.bytes, "\"" + Self.digest(writer.bytes) + "\"", flags)
    }

    static func writeFlags(_ flags: [Evaluation], to writer: inout JSONWriter) {
        writer.arrayStart()
        for flag in flags { flag.write(to: &writer) }
        writer.arrayEnd()
    }

    static let forwardedProto = HTTPField.Name("X-Forwarded-Proto")

    /// The event stream of a context, on the host the client used.
    static func streamURL(request: Request, target: Target) -> String {
        var components = URLComponents()
        components.path = "/ofrep/v1/event-streams"
        components.queryItems = [URLQueryItem(name: "targetingKey", value: target.userID)]
            + (target.deviceID.map { [URLQueryItem(name: "deviceId", value: $0)] } ?? [])
        let scheme = forwardedProto.flatMap { request.headers[$0] } == "https" ? "https" : "http"
        let host = request.head.authority ?? "127.0.0.1"
        return "\(scheme)://\(host)\(components.string ?? components.path)"
    }

    /// The target's device states, read once per request however many flags it evaluates:
    /// one device, or the user's devices (user level).
    private func states(appID: UUID, target: Target) async throws -> [DeviceStateCache.Entry] {
        if let deviceID = target.deviceID {
            return [try await service.device(.init(appID: appID, userID: target.userID, deviceID: deviceID))]
        }
        return try await service.userDevices(appID: appID, userID: target.userID).map(\.1)
    }

    private func evaluate(_ feature: Feature, target: Target, states: [DeviceStateCache.Entry]) -> Evaluation {
        let decision: GateDecision
        if target.deviceID != nil, let entry = states.first {
            decision = entry.state.decide(feature, version: entry.version)
        } else {
            decision = GateService.userDecision(feature, devices: states)
        }
        return Evaluation(
            key: feature.key, value: decision.enabled, reason: "TARGETING_MATCH",
            metadata: [("status", decision.status.rawValue), ("reason", decision.reason.rawValue), ("action", decision.action.rawValue)])
    }

    /// An OFREP-specific failure (context, parse, unknown flag), answered with its own code.
    struct ContextFailure: Error {
        var code: String
        var details: String
        var status: HTTPResponse.Status = .badRequest
    }

    /// Reads `{"context": {"targetingKey", "deviceId"}}` (an empty body is `{}`): UTF-8 JSON,
    /// an object without a key twice.
    static func target(from request: inout Request) async throws -> Target {
        let data: Data
        do {
            data = try await request.bodyData(limit: 64 * 1024)
        } catch {
            throw ContextFailure(code: "GENERAL", details: "the body is larger than 64 KiB", status: .contentTooLarge)
        }
        guard let text = data.isEmpty ? "{}" : String(data: data, encoding: .utf8), let root = JSONNode.parse(text),
              case .object = root, root.hasUniqueKeys
        else {
            throw ContextFailure(code: "PARSE_ERROR", details: "the body is not a JSON object")
        }
        guard let context = root["context"] else {
            throw ContextFailure(code: "TARGETING_KEY_MISSING", details: "context.targetingKey (the user id) is required")
        }
        guard case .object = context, context.hasUniqueKeys else {
            throw ContextFailure(code: "INVALID_CONTEXT", details: "context must be an object, each key once")
        }
        guard let rawKey = context["targetingKey"] else {
            throw ContextFailure(code: "TARGETING_KEY_MISSING", details: "context.targetingKey (the user id) is required")
        }
        guard let userID = rawKey.string, EventSubmission.isValidIdentifier(userID) else {
            throw ContextFailure(code: "INVALID_CONTEXT", details: "targetingKey must be \(EventSubmission.identifierRule)")
        }
        var deviceID: String?
        if let rawDevice = context["deviceId"] {
            guard let device = rawDevice.string, EventSubmission.isValidIdentifier(device) else {
                throw ContextFailure(code: "INVALID_CONTEXT", details: "deviceId must be \(EventSubmission.identifierRule)")
            }
            deviceID = device
        }
        return Target(userID: userID, deviceID: deviceID)
    }

    /// FNV-1a of the body, for the ETag.
    static func digest(_ bytes: [UInt8]) -> String {
        String(FNV1a.hash(bytes), radix: 16)
    }
}

/// OFREP's own error bodies: `{"key", "errorCode", "errorDetails"}`.
enum OFREPError {
    /// OFREP's error code for one of ours: OFREP names context and parse errors; everything
    /// else (auth, limits, outages) is GENERAL with the HTTP status telling which.
    static func code(for code: ServiceError.Code) -> String {
        switch code {
        case .malformedJSON: "PARSE_ERROR"
        case .notFound: "FLAG_NOT_FOUND"
        default: "GENERAL"
        }
    }

    static func response(_ status: HTTPResponse.Status, key: String?, code: String, details: String) throws -> Response {
        var writer = JSONWriter()
        writer.objectStart()
        writer.field("errorCode", code)
        writer.field("errorDetails", details)
        writer.fieldIfPresent("key", key)
        writer.objectEnd()
        return JSONResponse.make(status, data: Data(writer.bytes))
    }
}
