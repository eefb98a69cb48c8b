import Foundation

/// The API's form of an experiment (SPEC §16): `key`, the definition's fields with defaults
/// filled in, `state`, `createdAt`, `stoppedAt`, `stopReason` and `winner`, the last three null
/// while it runs. Times as RFC 3339, as everywhere in the API.
extension Experiment: Encodable {
    private enum CodingKeys: String, CodingKey {
        case key, state, createdAt, stoppedAt, stopReason, winner
    }

    public func encode(to encoder: any Encoder) throws {
        try definition.encode(to: encoder)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(key, forKey: .key)
        try container.encode(state, forKey: .state)
        try container.encode(RFC3339.string(from: createdAt), forKey: .createdAt)
        if let stoppedAt {
            try container.encode(RFC3339.string(from: stoppedAt), forKey: .stoppedAt)
        } else {
            try container.encodeNil(forKey: .stoppedAt)
        }
        if let stopReason { try container.encode(stopReason, forKey: .stopReason) } else { try container.encodeNil(forKey: .stopReason) }
        if let winner { try container.encode(winner, forKey: .winner) } else { try container.encodeNil(forKey: .winner) }
    }
}
