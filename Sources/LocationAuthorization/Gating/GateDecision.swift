/// Whether a feature may be switched on for a device, why, and what the app should do next
/// (SPEC §4, §5). The JSON field names are the API's.
public struct GateDecision: Sendable, Hashable, Codable {
    public var feature: String
    public var enabled: Bool
    public var reason: GateReason
    public var action: GateAction
    public var status: AuthorizationStatus
    public var provisional: Bool
    public var temporary: Bool
    /// The effective accuracy: full while temporary full accuracy lasts.
    public var accuracy: Accuracy
    public var requiredTier: Tier
    /// The stream version the decision reflects; 0 for a device with no events.
    public var version: Int64
    /// With `fixUsageDescriptions`: the Info.plist keys to add.
    public var missingKeys: [String]?

    public init(
        feature: String, enabled: Bool, reason: GateReason, action: GateAction, status: AuthorizationStatus,
        provisional: Bool, temporary: Bool, accuracy: Accuracy, requiredTier: Tier, version: Int64,
        missingKeys: [String]? = nil
    ) {
        self.feature = feature
        self.enabled = enabled
        self.reason = reason
        self.action = action
        self.status = status
        self.provisional = provisional
        self.temporary = temporary
        self.accuracy = accuracy
        self.requiredTier = requiredTier
        self.version = version
        self.missingKeys = missingKeys
    }

    /// The `reason` of an OFREP evaluation of this decision (SPEC §5, §15): `DISABLED` when the
    /// feature's kill switch decided it, else `TARGETING_MATCH` (the decision is the device's or
    /// the user's, targeted by the evaluation context). OFREP's single and bulk evaluations use it.
    public var ofrepReason: String {
        reason == .disabledByOperator ? "DISABLED" : "TARGETING_MATCH"
    }
}

/// Why a feature is on or off (SPEC §5 reasons).
public enum GateReason: String, Sendable, Hashable, Codable, CaseIterable {
    case authorized
    case restricted
    case locationServicesDisabled
    case denied
    case awaitingResponse
    case notDetermined
    case missingUsageDescription
    case alwaysUnavailable
    case temporaryAuthorization
    case needsAlways
    case alwaysDeclined
    case reducedAccuracy
    case serviceUnavailable
    /// SPEC §11: NSLocationRequireExplicitServiceSession and no session requiring authorization.
    case serviceSessionRequired
    /// SPEC §11: Always for the modern APIs needs a held `always` session.
    case alwaysSessionRequired
    /// SPEC §11: background locations need a background activity session or Always.
    case insufficientlyInUse
    /// SPEC §11: `CLMonitor` reported `conditionLimitExceeded`.
    case monitorLimitExceeded
    /// SPEC §12: Android blocked the permission group; only Settings can grant it.
    case blocked
    /// SPEC §15: the feature's kill switch is on (`disabled`).
    case disabledByOperator
    /// SPEC §15: the device's app version is below the feature's `minAppVersion`, or unknown.
    case appVersionTooOld
    /// SPEC §12 (the location button): the manifest makes ACCESS_FINE_LOCATION only for the
    /// location button, and this feature's precise cannot come from the button (it is not
    /// session-scoped, or the button is not available): only Settings can grant it.
    case preciseOnlyViaButton
}

/// What the app should do next (SPEC §5 actions).
public enum GateAction: String, Sendable, Hashable, Codable, CaseIterable {
    case none
    case requestWhenInUse
    case requestAlways
    case requestTemporaryFullAccuracy
    case openSettings
    case enableLocationServices
    case fixUsageDescriptions
    case startServiceSession
    /// Start a `CLServiceSession` requiring Always, from the foreground.
    case startAlwaysSession
    case startBackgroundActivity
    /// Add `location` to UIBackgroundModes (`missingKeys` names the key).
    case fixBackgroundModes
    /// Android: request coarse and fine location.
    case requestForeground
    /// Android 10 (API 29): request background location.
    case requestBackground
    /// Android 11+: background location is granted on the app's Settings page.
    case openBackgroundSettings
    /// Android 12+: request fine location to upgrade from approximate.
    case requestPrecise
    /// SPEC §15: the installed app is older than the feature's `minAppVersion`; offer the update.
    case updateApp
    /// Android 17: show the location button, whose tap grants precise for the session (SPEC §12;
    /// Play requires it for one-off uses of apps targeting 37, in place of the dialog).
    case showLocationButton
}
