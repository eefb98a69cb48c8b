import Foundation
import PostgresClient

/// What a change to an app's configuration did (SPEC §14 "Admin audit trail"; §15 for the kill
/// switch's two).
public enum AuditAction: String, Sendable, Hashable, CaseIterable, Encodable {
    /// `POST /v1/apps` or `locgate apps create`; the target is the app.
    case appCreated
    /// The target is the key's id; details its `scope` and `deviceBound`.
    case keyCreated
    /// The target is the key's id; details its `scope`.
    case keyRevoked
    /// A feature created, replaced or patched without flipping `disabled`; the target is its
    /// key, details `changes` (every field it changed, `{FIELD: {"from", "to"}}`) and, for a
    /// PUT, `created`.
    case featurePut
    /// A PUT or PATCH that turned an existing feature's `disabled` on (SPEC §15's kill switch),
    /// with all of its `changes` in the one entry.
    case featureDisabled
    /// A PUT or PATCH that turned it off again.
    case featureEnabled
    /// The target is the feature's key; `changes` has each of its fields to null.
    case featureDeleted
    /// The target is the app; details `days` (null: everything is kept).
    case retentionSet
    /// The target is the erasure's id, never the person's.
    case erasureRequested
    /// A dashboard session started; the actor and the target are the key that signed in.
    case dashboardSignIn
    /// A dashboard session ended at sign-out; the actor and the target are the session's key.
    case dashboardSignOut
    /// An experiment created or replaced (SPEC §16); the target is its key, details `created`.
    case experimentPut
    /// An experiment stopped; the target is its key. By an operator: details `winner`; by the
    /// guard (actor `{"guard": true}`): `variant`, `controlRate`, `variantRate` and `p`.
    case experimentStopped
    /// An experiment removed with its exposures and results; the target is its key.
    case experimentDeleted
}

/// A value of an entry's `details`: text, a whole number, another number (the guard's rates and
/// p, SPEC §16), a flag, null, or an array or object of these (a feature's `services`; `changes`' `{FIELD: {"from", "to"}}`). Details say what a
/// change was (a key's scope, a retention's days, a feature's fields before and after), never
/// whom it concerned.
public enum AuditDetail: Sendable, Hashable, Codable {
    case string(String)
    case int(Int)
    /// A number with a fraction; a whole number is `int`.
    case number(Double)
    case bool(Bool)
    case null
    case array([AuditDetail])
    case object([String: AuditDetail])

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let flag = try? container.decode(Bool.self) {
            self = .bool(flag)
        } else if let number = try? container.decode(Int.self) {
            self = .int(number)
        } else if let number = try? container.decode(Double.self) {
            self = .number(number)
        } else if let text = try? container.decode(String.self) {
            self = .string(text)
        } else if let items = try? container.decode([AuditDetail].self) {
            self = .array(items)
        } else {
            self = .object(try container.decode([String: AuditDetail].self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .string(let text): try container.encode(text)
        case .int(let number): try container.encode(number)
        case .number(let number): try container.encode(number)
        case .bool(let flag): try container.encode(flag)
        case .null: try container.encodeNil()
        case .array(let items): try container.encode(items)
        case .object(let members): try container.encode(members)
        }
    }

    /// The value as the dashboard shows it: arrays as `[a, b]`, objects as `{name: value}` in
    /// name order.
    public var text: String {
        switch self {
        case .string(let text): text
        case .int(let number): String(number)
        case .number(let number): String(number)
        case .bool(let flag): flag ? "true" : "false"
        case .null: "null"
        case .array(let items): "[" + items.map(\.text).joined(separator: ", ") + "]"
        case .object(let members):
            "{" + members.keys.sorted().map { "\($0): \(members[$0]?.text ?? "")" }.joined(separator: ", ") + "}"
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
    /// Random (SPEC §14 "Guard rails": opaque, it tells nothing of other apps' activity, nor
    /// of how many entries came before); the trail's order is kept apart from it.
    public var id: UUID
    /// RFC 3339, UTC, milliseconds.
    public var at: String
    public var actor: AuditActor
    /// The stored action's name (`AuditAction`'s raw value).
    public var action: String
    public var target: String?
    public var details: [String: AuditDetail]

    public init(id: UUID, at: String, actor: AuditActor, action: String, target: String?, details: [String: AuditDetail]) {
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
        try container.encode(id.lowercasedText, forKey: .id)
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
    /// The `after` of the next page (the id of this page's last entry), or nil when there is
    /// none.
    public var next: UUID?

    public init(entries: [AuditEntry], next: UUID?) {
        self.entries = entries
        self.next = next
    }

    public func encode(to encoder: any Encoder) throws {
        enum Keys: String, CodingKey { case entries, next }
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(entries, forKey: .entries)
        try container.encode(next?.lowercasedText, forKey: .next)
    }
}
