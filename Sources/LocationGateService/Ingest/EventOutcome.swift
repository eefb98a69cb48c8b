import LocationAuthorization

/// What applying one event produced, stored with the event in the log (`outcome`): the source
/// of the event's API result, of history, and of a duplicate's answer.
public struct EventOutcome: Sendable, Hashable, Codable {
    public var effects: [Effect]
    public var before: StatusSummary
    public var after: StatusSummary
    /// What analytics count of this event (SPEC §6).
    public var analytics: EventAnalytics?

    public init(effects: [Effect], before: StatusSummary, after: StatusSummary, analytics: EventAnalytics? = nil) {
        self.effects = effects
        self.before = before
        self.after = after
        self.analytics = analytics
    }
}

/// One event's result in `POST /v1/events` (SPEC §5).
public struct EventResult: Sendable, Hashable, Codable {
    public var id: String
    public var userId: String
    public var deviceId: String
    public var version: Int64
    public var effects: [Effect]
    public var status: AuthorizationStatus
    public var duplicate: Bool
}
