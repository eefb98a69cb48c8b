import LocationAuthorization
import LocationGateJSON

/// The outcome stored with every event, written and read by hand for the reasons given in
/// `LocationAuthorization/StoredJSON.swift`: the same form as the `Codable` conformance.
extension EventOutcome {
    var storedJSON: String {
        var writer = JSONWriter(capacity: 320)
        writer.objectStart()
        if let analytics { writer.key("analytics"); analytics.write(to: &writer) }
        writer.key("after")
        after.write(to: &writer)
        writer.key("before")
        before.write(to: &writer)
        writer.key("effects")
        writer.arrayStart()
        for effect in effects { effect.write(to: &writer) }
        writer.arrayEnd()
        writer.objectEnd()
        return writer.text
    }

    init?(node: JSONNode) {
        guard let items = node["effects"]?.array, let beforeNode = node["before"], let before = StatusSummary(node: beforeNode),
              let afterNode = node["after"], let after = StatusSummary(node: afterNode),
              let analytics = node.optional("analytics", EventAnalytics.init(node:))
        else { return nil }
        var effects: [Effect] = []
        effects.reserveCapacity(items.count)
        for item in items {
            guard let effect = Effect(node: item) else { return nil }
            effects.append(effect)
        }
        self.init(effects: effects, before: before, after: after, analytics: analytics)
    }
}

extension EventAnalytics {
    func write(to writer: inout JSONWriter) {
        writer.objectStart()
        writer.fieldIfPresent("always", always)
        writer.field("appVersion", appVersion)
        writer.fieldIfPresent("granted", granted)
        writer.fieldIfPresent("locationButton", locationButton)
        if let milestones { writer.field("milestones", strings: milestones) }
        writer.field("osMajor", osMajor)
        writer.field("platform", platform)
        writer.fieldIfPresent("prompt", prompt)
        writer.fieldIfPresent("settings", settings)
        writer.objectEnd()
    }

    init?(node: JSONNode) {
        guard let platform = node["platform"]?.string, let osMajor = node["osMajor"]?.int, let appVersion = node["appVersion"]?.string,
              let prompt = node.optional("prompt", as: Prompt.self), let granted = node.optional("granted", \.bool),
              let always = node.optional("always", \.bool), let settings = node.optional("settings", \.int),
              let milestones = node.optional("milestones", { $0.array?.compactMap(\.string) }),
              let locationButton = node.optional("locationButton", as: LocationButtonCount.self)
        else { return nil }
        self.init(
            platform: platform, osMajor: osMajor, appVersion: appVersion, prompt: prompt, granted: granted, always: always,
            settings: settings, milestones: milestones, locationButton: locationButton)
    }
}

extension JSONText {
    /// A stored outcome: the hand-written reader, or `Codable` (which says what is wrong) when
    /// the text is not in the form this code writes.
    static func outcome(_ text: String) throws -> EventOutcome {
        if let node = JSONNode.parse(text), let outcome = EventOutcome(node: node) { return outcome }
        return try decode(EventOutcome.self, text)
    }

    /// A stored device state, as `outcome(_:)`.
    static func state(_ text: String) throws -> DeviceState {
        if let state = DeviceState(storedJSON: text) { return state }
        return try decode(DeviceState.self, text)
    }

    /// A stored event from its `type` and `data` columns, as `outcome(_:)`.
    static func event(type: String, data: String) throws -> LocationEvent {
        if let event = LocationEvent(storedType: type, data: data) { return event }
        return try EventCoding.decodeEvent(#"{"type":"\#(type)","data":\#(data)}"#)
    }
}
