import LocationAuthorization
import LocationGateJSON

/// `GET /v1/users/{u}/devices/{d}/gates`.
public struct DeviceGates: Sendable, Codable {
    public var userId: String
    public var deviceId: String
    public var status: AuthorizationStatus
    public var provisional: Bool
    public var temporary: Bool
    public var accuracy: Accuracy
    public var version: Int64
    public var decisions: [GateDecision]
}

/// `GET /v1/users/{u}/gates`: a feature is enabled for the user when any device enables it.
public struct UserGates: Sendable, Codable {
    public struct DeviceVerdict: Sendable, Codable {
        public var deviceId: String
        public var enabled: Bool
        public var reason: GateReason
        public var action: GateAction
    }

    public struct FeatureVerdict: Sendable, Codable {
        public var feature: String
        public var enabled: Bool
        public var devices: [DeviceVerdict]
    }

    public var userId: String
    public var decisions: [FeatureVerdict]
}

/// One device's decisions in `POST /v1/gates/query`.
public struct DeviceDecisions: Sendable, Codable {
    public var userId: String
    public var deviceId: String
    public var decisions: [GateDecision]
}

/// `GET .../state`.
public struct StateView: Sendable, Codable {
    public var version: Int64
    public var state: DeviceState
    public var decisions: [GateDecision]
}

/// `GET .../history`, written by hand (`json`): an entry's `data` is the event's stored JSON,
/// shown as it was stored, which `Codable` cannot carry without a value type of its own.
public struct HistoryPage: Sendable {
    public struct Entry: Sendable {
        public var version: Int64
        public var id: String
        public var type: String
        public var data: JSONNode
        public var occurredAt: String
        public var recordedAt: String
        public var effects: [Effect]
        public var before: StatusSummary
        public var after: StatusSummary
    }

    public var entries: [Entry]
    public var nextAfterVersion: Int64?

    /// `{"entries": [...], "nextAfterVersion"}` with every key in byte order (as the API's
    /// other bodies); `nextAfterVersion` is written as null at the end, not left out.
    public var json: [UInt8] {
        var writer = JSONWriter(capacity: 128 + entries.count * 384)
        writer.objectStart()
        writer.key("entries")
        writer.arrayStart()
        for entry in entries { entry.write(to: &writer) }
        writer.arrayEnd()
        writer.key("nextAfterVersion")
        if let nextAfterVersion { writer.int(Int(nextAfterVersion)) } else { writer.null() }
        writer.objectEnd()
        return writer.bytes
    }
}

extension HistoryPage.Entry {
    func write(to writer: inout JSONWriter) {
        writer.objectStart()
        writer.key("after")
        after.write(to: &writer)
        writer.key("before")
        before.write(to: &writer)
        writer.key("data")
        writer.node(data, sortedKeys: true)
        writer.key("effects")
        writer.arrayStart()
        for effect in effects {
            // The stored form writes `kind` first; the answer keeps every key in byte order.
            var form = JSONWriter(capacity: 96)
            effect.write(to: &form)
            if let node = JSONNode.parse(bytes: form.bytes) { writer.node(node, sortedKeys: true) }
        }
        writer.arrayEnd()
        writer.field("id", id)
        writer.field("occurredAt", occurredAt)
        writer.field("recordedAt", recordedAt)
        writer.field("type", type)
        writer.field("version", Int(version))
        writer.objectEnd()
    }
}
