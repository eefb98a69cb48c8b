import Foundation
import PostgresClient

/// Who changed an app's configuration (SPEC §14 "Admin audit trail"): one of the app's keys
/// (by its id, never the key), the admin token of the server's configuration (which only
/// creates apps), or the command line (`locgate`), which needs no key.
public enum AuditActor: Sendable, Hashable {
    case key(UUID)
    case adminToken
    case cli

    /// `actor_kind` in `admin_audit`.
    var kind: String {
        switch self {
        case .key: "key"
        case .adminToken: "adminToken"
        case .cli: "cli"
        }
    }

    /// The key's id, for `actor_key_id`.
    var keyID: UUID? {
        if case .key(let id) = self { return id }
        return nil
    }

    /// The actor as stored; nil for a kind this build does not know.
    init?(kind: String, keyID: UUID?) {
        switch (kind, keyID) {
        case ("key", let id?): self = .key(id)
        case ("adminToken", nil): self = .adminToken
        case ("cli", nil): self = .cli
        default: return nil
        }
    }
}

/// The API's form: `{"keyId": "<lower-case uuid>"}`, `{"adminToken": true}` or `{"cli": true}`.
extension AuditActor: Encodable {
    private enum Keys: String, CodingKey { case keyId, adminToken, cli }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        switch self {
        case .key(let id): try container.encode(id.lowercasedText, forKey: .keyId)
        case .adminToken: try container.encode(true, forKey: .adminToken)
        case .cli: try container.encode(true, forKey: .cli)
        }
    }
}
