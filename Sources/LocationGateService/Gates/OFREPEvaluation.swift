import EventLog
import Foundation
import LocationAuthorization
import LocationGateJSON

/// An OFREP evaluation context (OFREP 0.3): `targetingKey` is the user id; `deviceId` picks one
/// device, and without it a flag is evaluated at the user level (`GatesCapability.userDecision`).
public struct OFREPTarget: Sendable, Hashable {
    public var userID: String
    public var deviceID: String?

    public init(userID: String, deviceID: String?) {
        self.userID = userID
        self.deviceID = deviceID
    }
}

/// One flag's evaluation: each feature is a boolean flag. Written by hand (`write(to:)`) with
/// its keys in byte order, as every body of the API.
public struct FlagEvaluation: Sendable {
    public var key: String
    public var value: Bool
    /// OFREP's reason (`GateDecision.ofrepReason`).
    public var reason: String
    /// The gate's status, reason and action, by name.
    public var metadata: [(name: String, value: String)]

    public var variant: String { value ? "enabled" : "disabled" }

    public init(key: String, value: Bool, reason: String, metadata: [(name: String, value: String)]) {
        self.key = key
        self.value = value
        self.reason = reason
        self.metadata = metadata
    }

    /// The evaluation of `decision`, the gate of the feature `key`.
    public init(key: String, decision: GateDecision) {
        self.init(
            key: key, value: decision.enabled, reason: decision.ofrepReason,
            metadata: [("status", decision.status.rawValue), ("reason", decision.reason.rawValue), ("action", decision.action.rawValue)])
    }

    /// `{"key", "metadata", "reason", "value", "variant"}`.
    public func write(to writer: inout JSONWriter) {
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

/// Every flag of an app for one target, and its ETag: the hash of exactly the bytes of
/// `{"flags": [...]}`, so that the same content always gives the same ETag. The bulk answer
/// and the OFREP event stream both compare it.
public struct BulkEvaluation: Sendable {
    public var flags: [FlagEvaluation]
    /// `{"flags": [...]}`, the bytes the ETag is the hash of.
    public var bytes: [UInt8]
    /// FNV-1a of `bytes` in hex, quoted as an HTTP entity tag.
    public var etag: String

    public init(flags: [FlagEvaluation]) {
        var writer = JSONWriter(capacity: 64 + flags.count * 160)
        writer.objectStart()
        writer.key("flags")
        Self.writeFlags(flags, to: &writer)
        writer.objectEnd()
        self.flags = flags
        self.bytes = writer.bytes
        self.etag = "\"" + String(FNV1a.hash(writer.bytes), radix: 16) + "\""
    }

    /// `[...]`, each flag as `FlagEvaluation.write(to:)` writes it.
    public static func writeFlags(_ flags: [FlagEvaluation], to writer: inout JSONWriter) {
        writer.arrayStart()
        for flag in flags { flag.write(to: &writer) }
        writer.arrayEnd()
    }
}

/// The OFREP face of the service (SPEC §5, OFREP 0.3): a flag, or every flag, for one target.
/// OFREP's single and bulk evaluations and its event streams all evaluate through it.
public protocol OFREPEvaluating: Sendable {
    /// The flag `key` for the target; nil when the app has no such feature.
    func evaluateFlag(appID: UUID, key: String, target: OFREPTarget) async throws(ServiceError) -> FlagEvaluation?
    /// Every flag of the app for the target, with the ETag of the result.
    func evaluateFlags(appID: UUID, target: OFREPTarget) async throws(ServiceError) -> BulkEvaluation
}

extension GatesCapability: OFREPEvaluating {
    public func evaluateFlag(appID: UUID, key: String, target: OFREPTarget) async throws(ServiceError) -> FlagEvaluation? {
        guard let feature = try await features.catalog(appID).first(where: { $0.key == key }) else { return nil }
        let states = try await ofrepStates(appID: appID, target: target)
        return Self.evaluate(feature, target: target, states: states)
    }

    public func evaluateFlags(appID: UUID, target: OFREPTarget) async throws(ServiceError) -> BulkEvaluation {
        let features = try await self.features.catalog(appID)
        let states = try await ofrepStates(appID: appID, target: target)
        return BulkEvaluation(flags: features.map { Self.evaluate($0, target: target, states: states) })
    }

    /// The target's device states, read once per evaluation however many flags it has: one
    /// device, or the user's devices (the user level).
    private func ofrepStates(appID: UUID, target: OFREPTarget) async throws(ServiceError) -> [DeviceStateCache.Entry] {
        if let deviceID = target.deviceID {
            return [try await device(StreamKey(appID: appID, userID: target.userID, deviceID: deviceID))]
        }
        return try await userDevices(appID: appID, userID: target.userID).map(\.1)
    }

    /// A device's own decision when the target names one, else the user level.
    private static func evaluate(_ feature: Feature, target: OFREPTarget, states: [DeviceStateCache.Entry]) -> FlagEvaluation {
        let decision: GateDecision
        if target.deviceID != nil, let entry = states.first {
            decision = entry.state.decide(feature, version: entry.version)
        } else {
            decision = Self.userDecision(feature, devices: states)
        }
        return FlagEvaluation(key: feature.key, decision: decision)
    }
}
