import Foundation
import PostgresClient

/// Who changed an app's configuration (SPEC §14 "Admin audit trail"): one of the app's keys
/// (by its id, never the key), the admin token of the server's configuration (which only
/// creates apps), the command line (`locgate`), which needs no key, or the experiments' guard
/// (SPEC §16), which stops an experiment on its own and is no person.
public enum AuditActor: Sendable, Hashable {
    case key(UUID)
    case adminToken
    case cli
    /// `ExperimentGuardian`: a guarded experiment whose variant is clearly worse than the control.
    case `guard`

    /// `actor_kind` in `admin_audit`.
    var kind: String {
        switch self {
        case .key: "key"
        case .adminToken: "adminToken"
        case .cli: "cli"
        case .guard: "guard"
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
        case ("guard", nil): self = .guard
        default: return nil
        }
    }
}

/// The API's form: `{"keyId": "<lower-case uuid>"}`, `{"adminToken": true}`, `{"cli": true}` or
/// `{"guard": true}`.
extension AuditActor: Encodable {
    private enum Keys: String, CodingKey { case keyId, adminToken, cli, `guard` }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        switch self {
        case .key(let id): try container.encode(id.lowercasedText, forKey: .keyId)
        case .adminToken: try container.encode(true, forKey: .adminToken)
        case .cli: try container.encode(true, forKey: .cli)
        case .guard: try container.encode(true, forKey: .guard)
        }
    }
}
