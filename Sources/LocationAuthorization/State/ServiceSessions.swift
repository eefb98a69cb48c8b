/// What a `CLServiceSession` asks for (SPEC §11, `CLServiceSession.AuthorizationRequirement`).
public enum SessionRequirement: String, Sendable, Hashable, Codable, CaseIterable {
    case none
    case whenInUse
    case always
}

/// One `CLServiceSession` the app holds, under the key the app gave it (SPEC §11, V1).
public struct ServiceSession: Sendable, Hashable {
    public var requirement: SessionRequirement
    /// The Info.plist purpose key of `init(authorization:fullAccuracyPurposeKey:)`.
    public var fullAccuracyPurposeKey: String?
    /// Held and in force. False while a session started out of use waits for the foreground,
    /// and while a session from before a relaunch waits to be re-taken (`resumable`).
    public var active: Bool
    /// Held when the app was terminated or relaunched: re-taken by a `started` with the same
    /// key and requirement in the relaunch window (V1).
    public var resumable: Bool
    /// V2: this session will not ask for full accuracy, because it was held when the person
    /// kept reduced accuracy, or its purpose key is not declared (K3). Shown in the state as an
    /// extra field so that the stored form reads back exactly.
    public var fullAccuracyDeclined: Bool

    public init(
        requirement: SessionRequirement, fullAccuracyPurposeKey: String? = nil, active: Bool, resumable: Bool = false,
        fullAccuracyDeclined: Bool = false
    ) {
        self.requirement = requirement
        self.fullAccuracyPurposeKey = fullAccuracyPurposeKey
        self.active = active
        self.resumable = resumable
        self.fullAccuracyDeclined = fullAccuracyDeclined
    }

    /// Counts for gates and `effectiveAlways`: active, or resumable (Core Location still acts
    /// on it until the relaunch window closes, V1).
    public var isEffective: Bool { active || resumable }
}

/// The part of a device's state that the iOS 18 APIs add (SPEC §11): the service sessions held,
/// the background activity session, and what diagnostics said about monitoring.
///
/// Kept together because most devices share one of a few values of it (nothing, or one session
/// of one requirement), which the gate's cache interns instead of storing per device.
public struct ServiceSessionState: Sendable, Hashable {
    /// Session key → session.
    public var sessions: [String: ServiceSession] = [:]
    /// A `CLBackgroundActivitySession` is held (V5).
    public var backgroundActivity = false
    /// One was held when the app was terminated or relaunched; re-taken in the relaunch window.
    public var backgroundActivityResumable = false
    /// A `CLMonitor` diagnostic reported `conditionLimitExceeded` (V4).
    public var monitorLimited = false
    /// V2 reported a missing usage-description key once; it stays quiet until the next
    /// `contextReported`.
    public var promptFailureReported = false

    public init() {}

    /// At most this many sessions are held per device: a client that keeps starting new keys
    /// is refused instead of growing the state (422 `ruleViolation`).
    public static let maxSessions = 32

    /// Some session or background activity waits to be re-taken: the relaunch window is open.
    public var relaunchWindowOpen: Bool {
        backgroundActivityResumable || sessions.values.contains { $0.resumable }
    }

    /// An active or resumable `always` session (gates and `effectiveAlways`, V1).
    public var holdsEffectiveAlwaysSession: Bool {
        sessions.values.contains { $0.requirement == .always && $0.isEffective }
    }

    /// An active or resumable session with a requirement other than `none` (the header's "a
    /// CLServiceSession requiring authorization").
    public var holdsEffectiveAuthorizingSession: Bool {
        sessions.values.contains { $0.requirement != .none && $0.isEffective }
    }

    /// The background activity counts for gates while held or resumable (V1).
    public var backgroundActivityEffective: Bool { backgroundActivity || backgroundActivityResumable }
}

/// Where a diagnostic came from (SPEC §11 `diagnosticObserved.source`).
public enum DiagnosticSource: String, Sendable, Hashable, Codable, CaseIterable {
    case serviceSession
    case liveUpdates
    case monitor
    case backgroundActivity

    /// The flags this source's diagnostic type has (Apple's types; SPEC §11's table).
    public var allowedFlags: Set<DiagnosticFlag> {
        let common: Set<DiagnosticFlag> = [
            .authorizationDenied, .authorizationDeniedGlobally, .authorizationRestricted, .insufficientlyInUse,
            .serviceSessionRequired, .authorizationRequestInProgress,
        ]
        switch self {
        case .serviceSession: return common.union([.fullAccuracyDenied, .alwaysAuthorizationDenied, .accuracyLimited])
        case .liveUpdates: return common.union([.accuracyLimited, .locationUnavailable, .stationary])
        case .monitor: return common.union([.accuracyLimited, .conditionLimitExceeded, .conditionUnsupported, .persistenceUnavailable])
        case .backgroundActivity: return common
        }
    }
}

/// The diagnostic properties of `CLServiceSession.Diagnostic`, `CLLocationUpdate`,
/// `CLMonitor.Event` and `CLBackgroundActivitySession.Diagnostic` (SPEC §11).
public enum DiagnosticFlag: String, Sendable, Hashable, Codable, CaseIterable, Comparable {
    case authorizationDenied
    case authorizationDeniedGlobally
    case authorizationRestricted
    case insufficientlyInUse
    case serviceSessionRequired
    case fullAccuracyDenied
    case alwaysAuthorizationDenied
    case authorizationRequestInProgress
    case accuracyLimited
    case locationUnavailable
    case stationary
    case conditionLimitExceeded
    case conditionUnsupported
    case persistenceUnavailable

    /// Flags that describe delivery, never authorization (V4: `deliveryOnly`).
    public var describesDeliveryOnly: Bool {
        switch self {
        case .stationary, .locationUnavailable, .conditionUnsupported, .persistenceUnavailable: true
        default: false
        }
    }

    public static func < (lhs: DiagnosticFlag, rhs: DiagnosticFlag) -> Bool {
        (allCases.firstIndex(of: lhs) ?? 0) < (allCases.firstIndex(of: rhs) ?? 0)
    }
}

/// `diagnosticObserved.data`: a diagnostic as the device reported it.
public struct Diagnostic: Sendable, Hashable {
    public var source: DiagnosticSource
    /// The session it came from (`serviceSession` only).
    public var session: String?
    /// The properties that were true; empty when all were false.
    public var flags: Set<DiagnosticFlag>

    public init(source: DiagnosticSource, session: String? = nil, flags: Set<DiagnosticFlag> = []) {
        self.source = source
        self.session = session
        self.flags = flags
    }
}

/// `serviceSessionChanged.data`.
public struct ServiceSessionChange: Sendable, Hashable {
    public enum Action: String, Sendable, Hashable, Codable, CaseIterable {
        case started
        case invalidated
    }

    public var session: String
    public var action: Action
    /// With `started`.
    public var requirement: SessionRequirement?
    public var fullAccuracyPurposeKey: String?

    public init(session: String, action: Action, requirement: SessionRequirement? = nil, fullAccuracyPurposeKey: String? = nil) {
        self.session = session
        self.action = action
        self.requirement = requirement
        self.fullAccuracyPurposeKey = fullAccuracyPurposeKey
    }

    public static func started(_ session: String, _ requirement: SessionRequirement, fullAccuracyPurposeKey: String? = nil) -> Self {
        ServiceSessionChange(session: session, action: .started, requirement: requirement, fullAccuracyPurposeKey: fullAccuracyPurposeKey)
    }

    public static func invalidated(_ session: String) -> Self {
        ServiceSessionChange(session: session, action: .invalidated)
    }
}
