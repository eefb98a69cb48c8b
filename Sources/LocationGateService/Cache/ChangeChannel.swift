import EventLog

/// The NOTIFY channels a server follows to keep its caches coherent (`CacheFollower`), each
/// with what its payload says. A channel is matched here by name, and every channel is handled
/// by a switch over these cases, so a new one cannot be left unhandled.
enum ChangeChannel: CaseIterable, Sendable {
    /// `locgate_events`: the streams an append moved, and their versions (`StreamChange`).
    case streams
    /// `locgate_features`: the app whose catalog changed (its id), or anything else for every app.
    case features
    /// `locgate_keys`: a revoked key's hash, or anything else for every key.
    case keys
    /// `locgate_erasures`: `work` for the erasure worker, or an erasure whose phase 1 is done
    /// (its id), which every server acknowledges once it has forgotten its devices.
    case erasures

    /// The channel's name in PostgreSQL, declared where its notifications are sent.
    var name: String {
        switch self {
        case .streams: EventLog.notificationChannel
        case .features: FeatureCatalog.notificationChannel
        case .keys: APIKeys.notificationChannel
        case .erasures: ErasureCapability.erasureChannel
        }
    }

    /// The channel named `name`; nil for one a server does not follow.
    init?(name: String) {
        guard let channel = Self.allCases.first(where: { $0.name == name }) else { return nil }
        self = channel
    }
}
