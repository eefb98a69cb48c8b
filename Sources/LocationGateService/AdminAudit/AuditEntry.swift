import Foundation

/// What a change to an app's configuration did (SPEC §14 "Admin audit trail"; §15 for the kill
/// switch's two).
public enum AuditAction: String, Sendable, Hashable, CaseIterable, Encodable {
    /// `POST /v1/apps` or `locgate apps create`; the target is the app.
    case appCreated
    /// The target is the key's id; details its `scope` and `deviceBound`.
    case keyCreated
    /// The target is the key's id; details its `scope`.
    case keyRevoked
    /// A feature created, or replaced without flipping `disabled`; the target is its key.
    case featurePut
    /// A PUT that turned an existing feature's `disabled` on (SPEC §15's kill switch).
    case featureDisabled
    /// A PUT that turned it off again.
    case featureEnabled
    /// The target is the feature's key.
    case featureDeleted
    /// The target is the app; details `days` (null: everything is kept).
    case retentionSet
    /// The target is the erasure's id, never the person's.
    case erasureRequested
    /// A dashboard session started; the actor and the target are the key that signed in.
    case dashboardSignIn
    /// A dashboard session ended at sign-out; the actor and the target are the session's key.
    case dashboardSignOut
}

/// A value of an entry's `details`: text, a whole number, a flag or null. Details say what a
/// change was (a key's scope, a retention's days), never whom it concerned.
public enum AuditDetail: Sendable, Hashable, Codable {
    case string(String)
    case int(Int)
    case bool(Bool)
    case null

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let flag = try? container.decode(Bool.self) {
            self = .bool(flag)
        } else if let number = try? container.decode(Int.self) {
            self = .int(number)
        } else {
            self = .string(try container.decode(String.self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .string(let text): try container.encode(text)
        case .int(let number): try container.encode(number)
        case .bool(let flag): try container.encode(flag)
        case .null: try container.encodeNil()
        }
    }

    /// The value as the dashboard shows it.
    public var text: String {
        switch self {
        case .string(let text): text
        case .int(let number): String(number)
        case .bool(let flag): flag ? "true" : "false"
        case .null: "null"
        }
    }
}

/// A change as it is recorded, in the change's own transaction (`AdminAuditLog.record`).
public struct AuditChange: Sendable, Hashable {
    public var appID: UUID
    public var actor: AuditActor
    public var action: AuditAction
    /// A key id, a feature key, the app id or an erasure id; nil when the change has none.
    public var target: String?
    public var details: [String: AuditDetail]

    public init(appID: UUID, actor: AuditActor, action: AuditAction, target: String?, details: [String: AuditDetail] = [:]) {
        self.appID = appID
        self.actor = actor
        self.action = action
        self.target = target
        self.details = details
    }
}

/// One entry of the trail as `GET /v1/audit` answers it:
/// `{"id", "at", "actor", "action", "target", "details"}`, `target` null when there is none.
public struct AuditEntry: Sendable, Hashable, Encodable {
    /// Increasing within an app, in commit order: pass the last one seen as `after`.
    public var id: Int64
    /// RFC 3339, UTC, milliseconds.
    public var at: String
    public var actor: AuditActor
    /// The stored action's name (`AuditAction`'s raw value).
    public var action: String
    public var target: String?
    public var details: [String: AuditDetail]

    public init(id: Int64, at: String, actor: AuditActor, action: String, target: String?, details: [String: AuditDetail]) {
        self.id = id
        self.at = at
        self.actor = actor
        self.action = action
        self.target = target
        self.details = details
    }

    public func encode(to encoder: any Encoder) throws {
        enum Keys: String, CodingKey { case id, at, actor, action, target, details }
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(id, forKey: .id)
        try container.encode(at, forKey: .at)
        try container.encode(actor, forKey: .actor)
        try container.encode(action, forKey: .action)
        try container.encode(target, forKey: .target)
        try container.encode(details, forKey: .details)
    }
}

/// A page of the trail: `{"entries": [...], "next"}`, `next` null at the end.
public struct AuditPage: Sendable, Hashable, Encodable {
    public var entries: [AuditEntry]
    /// The `after` of the next page, or nil when there is none.
    public var next: Int64?

    public init(entries: [AuditEntry], next: Int64?) {
        self.entries = entries
        self.next = next
    }

    public func encode(to encoder: any Encoder) throws {
        enum Keys: String, CodingKey { case entries, next }
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(entries, forKey: .entries)
        try container.encode(next, forKey: .next)
    }
}
