/// One platform's authorization rules, behind one seam: a pure reducer over the device state
/// (SPEC §3 for Core Location) and the gate's verdict over it (SPEC §4).
///
/// The reducer and the gate of the rest of the system (ingest, replay, verify, the cache, the
/// gates, analytics) call `DeviceState.apply` and `DeviceState.decide`, which pick the rules of
/// the device's platform family here and nowhere else. A second platform is therefore an
/// addition: a conformance in a folder of its own under `Rules/`, and one case of
/// `PlatformFamily` naming it.
public protocol PlatformRules {
    /// Applies an event in place. Every check that can reject runs before anything changes, so a
    /// rejected event leaves the state as it was.
    static func apply(_ event: LocationEvent, to state: inout DeviceState) throws(AuthorizationRejection) -> [Effect]

    /// The verdict for one feature: the status table, the platform's own rows and accuracy.
    /// `enabled` follows from `reason == .authorized`.
    static func verdict(for feature: Feature, tier: Tier, state: DeviceState) -> GateVerdict

    /// The tier the feature needs on this device (SPEC §4).
    static func requiredTier(of feature: Feature, state: DeviceState) -> Tier

    /// The platform's last word on a whole decision, after the verdict and the catalog's rows
    /// (SPEC §15) gave it: Android's location button (SPEC §12) changes actions, reasons and
    /// `temporary` there. Core Location has none (the default).
    static func finish(_ decision: inout GateDecision, for feature: Feature, tier: Tier, state: DeviceState)
}

extension PlatformRules {
    public static func finish(_ decision: inout GateDecision, for feature: Feature, tier: Tier, state: DeviceState) {}
}

/// The reason, the action and, for `fixUsageDescriptions`, the missing keys of a gate decision.
public struct GateVerdict: Sendable, Hashable {
    public var reason: GateReason
    public var action: GateAction
    public var missingKeys: [String]?

    public init(_ reason: GateReason, _ action: GateAction, missingKeys: [String]? = nil) {
        self.reason = reason
        self.action = action
        self.missingKeys = missingKeys
    }

    public static let authorized = GateVerdict(.authorized, .none)
}

/// The platform families whose rules differ. A device's family is fixed by its context; a
/// device that never reported one is an Apple device on current iOS (SPEC §2).
public enum PlatformFamily: String, Sendable, Hashable, CaseIterable {
    /// iOS, iPadOS, macOS, Mac Catalyst, watchOS, tvOS, visionOS: Core Location.
    case apple
    /// Android's runtime permissions (SPEC §12).
    case android

    /// The rules of this family.
    public var rules: any PlatformRules.Type {
        switch self {
        case .apple: CoreLocationRules.self
        case .android: AndroidRules.self
        }
    }
}

/// The result of applying one event: the next state and what happened.
public struct Transition: Sendable, Hashable {
    public var state: DeviceState
    public var effects: [Effect]
}

extension DeviceState {
    /// The platform family whose rules apply to this device.
    public var family: PlatformFamily { context.family }

    /// The reducer: `(state, event) -> (state, effects)`, or a typed rejection. Pure: the same
    /// state and event always give the same result.
    public func reduce(_ event: LocationEvent) throws(AuthorizationRejection) -> Transition {
        var next = self
        let effects = try next.apply(event)
        return Transition(state: next, effects: effects)
    }

    /// Applies an event in place with the rules of the device's platform family; a rejected
    /// event leaves the state as it was.
    ///
    /// The family is fixed by the first context that names a platform (SPEC §12): that context
    /// is applied by the rules of its own family, and a later one naming the other family is
    /// refused.
    public mutating func apply(_ event: LocationEvent) throws(AuthorizationRejection) -> [Effect] {
        var family = self.family
        if case .contextReported(let report) = event, let platform = report.platform, platform.family != family {
            guard context.platform == nil else {
                throw AuthorizationRejection(
                    .platformFamilyChanged,
                    "contextReported: this device reported \(context.effectivePlatform.rawValue); a device's platform family does not change")
            }
            family = platform.family
        }
        guard event.type.isAccepted(by: family) else {
            throw AuthorizationRejection.notAccepted(event.type, by: family, on: context.effectivePlatform)
        }
        return try family.rules.apply(event, to: &self)
    }
}
