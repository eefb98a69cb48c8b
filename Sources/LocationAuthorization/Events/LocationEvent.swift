/// Something that happened to a device's Core Location authorization (SPEC §1). The cases are
/// the event `type`s; their associated values are the `data` fields.
public enum LocationEvent: Sendable, Hashable {
    /// The app launched or was updated (C1).
    case contextReported(DeviceContext)
    /// The app called one of the request methods (A rules).
    case authorizationRequested(AuthorizationRequest)
    /// The person answered the prompt on screen (P rules).
    case promptResponded(PromptChoice)
    /// An event that needs Always authorization was about to be delivered (E1).
    case alwaysEventOccurred(AlwaysService)
    /// The app's use state changed (S1). Android reports whether a location foreground service
    /// runs instead of the indicator (`foregroundService`, nil on Apple platforms; D10).
    case appStateChanged(AppState, backgroundIndicator: Bool, foregroundService: Bool? = nil)
    /// The person changed the app's location setting in Settings (T1, T2).
    case settingsChanged(authorization: SettingsAuthorization?, preciseLocation: Bool?)
    /// The system-wide Location Services switch (G1).
    case locationServicesChanged(enabled: Bool)
    /// Parental controls or device management (G2).
    case restrictionChanged(restricted: Bool)
    /// The delegate reported a status: the device is the truth (O1).
    case statusObserved(AuthorizationStatus, accuracy: Accuracy?)
    /// The app started or invalidated a `CLServiceSession` (V1).
    case serviceSessionChanged(ServiceSessionChange)
    /// The app started or invalidated a `CLBackgroundActivitySession` (V5).
    case backgroundActivityChanged(active: Bool)
    /// A session, live-update sequence, monitor or background activity reported a diagnostic:
    /// the device is the truth (V4).
    case diagnosticObserved(Diagnostic)
    /// Android: the app called `requestPermissions` (D1-D5).
    case permissionsRequested(Set<AndroidPermission>)
    /// Android: `onRequestPermissionsResult` (D5, D6, D9).
    case permissionsResult(PermissionsResult)
    /// Android: `checkSelfPermission` / `isLocationEnabled`; the device is the truth (D6, D9).
    case permissionsObserved(granted: Set<AndroidPermission>, locationEnabled: Bool?)
    /// Android reset the app's permissions (D8).
    case permissionsReset(PermissionsResetReason)

    /// The `type` of the JSON form.
    public var type: EventType {
        switch self {
        case .contextReported: .contextReported
        case .authorizationRequested: .authorizationRequested
        case .promptResponded: .promptResponded
        case .alwaysEventOccurred: .alwaysEventOccurred
        case .appStateChanged: .appStateChanged
        case .settingsChanged: .settingsChanged
        case .locationServicesChanged: .locationServicesChanged
        case .restrictionChanged: .restrictionChanged
        case .statusObserved: .statusObserved
        case .serviceSessionChanged: .serviceSessionChanged
        case .backgroundActivityChanged: .backgroundActivityChanged
        case .diagnosticObserved: .diagnosticObserved
        case .permissionsRequested: .permissionsRequested
        case .permissionsResult: .permissionsResult
        case .permissionsObserved: .permissionsObserved
        case .permissionsReset: .permissionsReset
        }
    }
}

/// The event type names of SPEC §1.
public enum EventType: String, Sendable, Hashable, Codable, CaseIterable {
    case contextReported
    case authorizationRequested
    case promptResponded
    case alwaysEventOccurred
    case appStateChanged
    case settingsChanged
    case locationServicesChanged
    case restrictionChanged
    case statusObserved
    case serviceSessionChanged
    case backgroundActivityChanged
    case diagnosticObserved
    case permissionsRequested
    case permissionsResult
    case permissionsObserved
    case permissionsReset

    /// The types only Android's rules accept (SPEC §12).
    public var isAndroidOnly: Bool {
        switch self {
        case .permissionsRequested, .permissionsResult, .permissionsObserved, .permissionsReset: true
        default: false
        }
    }

    /// The types Android's rules accept besides its own: the shared ones.
    public var isSharedWithAndroid: Bool {
        switch self {
        case .contextReported, .appStateChanged, .settingsChanged, .locationServicesChanged: true
        default: false
        }
    }
}

/// `authorizationRequested.data`: which request method, and the purpose key of
/// `requestTemporaryFullAccuracyAuthorization(withPurposeKey:)`.
public struct AuthorizationRequest: Sendable, Hashable {
    public var kind: RequestKind
    public var purposeKey: String?

    public init(_ kind: RequestKind, purposeKey: String? = nil) {
        self.kind = kind
        self.purposeKey = purposeKey
    }

    public static let whenInUse = AuthorizationRequest(.whenInUse)
    public static let always = AuthorizationRequest(.always)
    public static func temporaryFullAccuracy(_ purposeKey: String) -> AuthorizationRequest {
        AuthorizationRequest(.temporaryFullAccuracy, purposeKey: purposeKey)
    }
}
