import LocationAuthorization

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

/// `GET .../history`.
public struct HistoryPage: Sendable, Codable {
    public struct Entry: Sendable, Codable {
        public var version: Int64
        public var id: String
        public var type: String
        public var data: JSONValue
        public var occurredAt: String
        public var recordedAt: String
        public var effects: [Effect]
        public var before: StatusSummary
        public var after: StatusSummary
    }

    public var entries: [Entry]
    public var nextAfterVersion: Int64?

    enum CodingKeys: String, CodingKey {
        case entries, nextAfterVersion
    }

    /// `nextAfterVersion` is written as null at the end, not left out.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(entries, forKey: .entries)
        try container.encode(nextAfterVersion, forKey: .nextAfterVersion)
    }
}
