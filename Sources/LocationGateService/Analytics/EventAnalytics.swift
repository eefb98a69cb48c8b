import Foundation
import LocationAuthorization

/// Firsts in a device's life that the escalation analytics count (SPEC §6), each once.
public struct DeviceMilestones: OptionSet, Sendable, Hashable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    public static let reachedWhenInUse = DeviceMilestones(rawValue: 1)
    public static let askedAlways = DeviceMilestones(rawValue: 2)
    public static let permanentAlways = DeviceMilestones(rawValue: 4)
    public static let provisional = DeviceMilestones(rawValue: 8)
    public static let provisionalToPermanent = DeviceMilestones(rawValue: 16)

    public static let names: [(DeviceMilestones, String)] = [
        (.reachedWhenInUse, "reachedWhenInUse"), (.askedAlways, "askedAlways"), (.permanentAlways, "permanentAlways"),
        (.provisional, "provisional"), (.provisionalToPermanent, "provisionalToPermanent"),
    ]

    /// The milestones a transition reaches.
    static func reached(before: DeviceState, after: DeviceState, effects: [Effect]) -> DeviceMilestones {
        var reached: DeviceMilestones = []
        // SPEC §12: on Android only a grant that is not the location button's one-time grant
        // (`temporary`) reaches When In Use.
        if after.status == .authorizedWhenInUse && !(after.family == .android && after.temporary) {
            reached.insert(.reachedWhenInUse)
        }
        // Asked for Always from When In Use: the upgrade prompt, or 13.0-13.3's silent grant.
        // Android's background dialog and Settings page are its escalation (SPEC §12).
        if effects.contains(.promptShown(.alwaysUpgrade)) || effects.contains(.promptShown(.backgroundDialog))
            || effects.contains(.promptShown(.backgroundSettings))
            || (before.status == .authorizedWhenInUse && after.status == .authorizedAlways && after.provisional) {
            reached.insert(.askedAlways)
        }
        if after.status == .authorizedAlways && !after.provisional { reached.insert(.permanentAlways) }
        if after.provisional { reached.insert(.provisional) }
        if before.provisional && after.authorization == .authorizedAlways && !after.provisional {
            reached.insert(.provisionalToPermanent)
        }
        return reached
    }
}

/// What analytics need of one event, computed with the state in the append transaction and
/// stored in the event's outcome: the device context then, the prompt an answer answered, and
/// the milestones reached for the first time.
public struct EventAnalytics: Sendable, Hashable, Codable {
    public var platform: String
    public var osMajor: Int
    public var appVersion: String
    /// For `promptResponded`: the prompt answered, and whether the answer left the device
    /// authorized (for fullAccuracy: allowed full accuracy) and in Always.
    public var prompt: Prompt?
    public var granted: Bool?
    public var always: Bool?
    /// For `settingsChanged` with an authorization: +1 upgrade, -1 downgrade, 0 same rank.
    public var settings: Int?
    /// Milestones reached for the first time.
    public var milestones: [String]?
    /// For `locationButtonSession` and `locationButtonResult`: what the event counts as in the
    /// location button's analytics (SPEC §12); nil for a closed session.
    public var locationButton: LocationButtonCount?

    /// What analytics count of an event; nil when it counts for nothing (most observations),
    /// so that its stored outcome carries no analytics and the rollup need not read it back.
    static func make(
        event: LocationEvent, before: DeviceState, after: DeviceState, effects: [Effect],
        newMilestones: DeviceMilestones
    ) -> EventAnalytics? {
        // The context when the event happened (a contextReported event counts under the new one).
        let context = after.context
        var analytics = EventAnalytics(
            platform: context.platform?.rawValue ?? "unknown", osMajor: context.osMajor ?? 0,
            appVersion: context.appVersion ?? "unknown")
        // The answer: explicit, or inferred from an observation (O2).
        var answer: (Prompt, PromptChoice)?
        if case .promptResponded(let choice) = event, let prompt = before.pendingPrompt { answer = (prompt, choice) }
        for case .answerInferred(let prompt, let choice) in effects { answer = (prompt, choice) }
        if let (prompt, choice) = answer {
            analytics.prompt = prompt
            if prompt == .fullAccuracy || prompt == .precise {
                // Accuracy prompts: a grant is full accuracy (Android: precise).
                analytics.granted = choice == .allowFullAccuracy || choice == .precise
                analytics.always = false
            } else if prompt == .locationButton {
                // SPEC §12: the location button's consent dialog; a grant is `allow` (B3, B4).
                analytics.granted = choice == .allow
                analytics.always = false
            } else if choice == .dismissed {
                // Android: a dialog closed without an answer grants nothing.
                analytics.granted = false
                analytics.always = false
            } else if prompt == .backgroundDialog || prompt == .backgroundSettings {
                // Android's background prompts ask for background: only that is a grant.
                analytics.granted = choice == .allowAllTheTime
                analytics.always = choice == .allowAllTheTime
            } else {
                analytics.granted = after.authorization == .authorizedWhenInUse || after.authorization == .authorizedAlways
                analytics.always = after.authorization == .authorizedAlways
            }
        }
        if case .settingsChanged(let setting, _) = event, setting != nil {
            let change = after.authorization.rank - before.authorization.rank
            analytics.settings = change > 0 ? 1 : (change < 0 ? -1 : 0)
        }
        analytics.locationButton = LocationButtonCount.of(event, effects: effects)
        if !newMilestones.isEmpty {
            analytics.milestones = DeviceMilestones.names.filter { newMilestones.contains($0.0) }.map(\.1)
        }
        var choice: PromptChoice?
        if case .promptResponded(let explicit) = event { choice = explicit }
        return analytics.counters(effects: effects, choice: choice, type: event.type).isEmpty ? nil : analytics
    }

    /// The rollup counters this event adds to (metric, key).
    /// `choice` is the explicit answer of a `promptResponded`; an inferred one is read from the
    /// effects. A correction (O2) moves one answer from one choice to the other: -1 and +1.
    /// `type` tells a session's prompts (V6 `sessionShown`) from a request's.
    func counters(effects: [Effect], choice: PromptChoice?, type: EventType?) -> [(metric: String, key: String, count: Int64)] {
        var counters: [(metric: String, key: String, count: Int64)] = []
        if let type {
            for prompt in Effect.sessionPrompts(in: effects, of: type) {
                counters.append(("promptSessionShown", prompt.rawValue, 1))
            }
        }
        var choice = choice
        var inferred = false
        for effect in effects {
            switch effect {
            case .promptShown(let prompt):
                counters.append(("promptShown", prompt.rawValue, 1))
            case .answerInferred(_, let inferredChoice):
                choice = inferredChoice
                inferred = true
            case .answerCorrected(let prompt, let from, let to):
                counters.append(("promptChoice", "\(prompt.rawValue):\(from.rawValue)", -1))
                counters.append(("promptChoice", "\(prompt.rawValue):\(to.rawValue)", 1))
            default:
                break
            }
        }
        if let prompt {
            counters.append(("promptAnswered", prompt.rawValue, 1))
            if inferred { counters.append(("promptInferred", prompt.rawValue, 1)) }
            if let choice { counters.append(("promptChoice", "\(prompt.rawValue):\(choice.rawValue)", 1)) }
            if granted == true { counters.append(("promptGranted", prompt.rawValue, 1)) }
            if always == true { counters.append(("promptAlways", prompt.rawValue, 1)) }
        }
        if let settings, settings != 0 { counters.append((settings > 0 ? "settingsUpgrade" : "settingsDowngrade", "", 1)) }
        // SPEC §12: the location button's event counts, one counter per field of its row.
        if let locationButton {
            for field in locationButton.counted(choice: prompt == .locationButton ? choice : nil) {
                counters.append((LocationButtonCount.metric, field, 1))
            }
        }
        for milestone in milestones ?? [] { counters.append(("milestone", milestone, 1)) }
        return counters
    }
}
