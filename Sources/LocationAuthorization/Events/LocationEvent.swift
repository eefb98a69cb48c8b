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
    /// Android 17: the location button's session opened, was closed, or failed with the error's
    /// class name (`LocationButtonClient.onSessionOpened`, `close()`, `onSessionError`; B1).
    case locationButtonSession(LocationButtonSessionState, cause: String? = nil)
    /// Android 17: `LocationButtonClient.onPermissionResult(isGranted)` (B2-B5).
    case locationButtonResult(granted: Bool)

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
        case .locationButtonSession: .locationButtonSession
        case .locationButtonResult: .locationButtonResult
        }
    }
}

/// The event type names of SPEC §1, each with its traits beside it: every list of types (which
/// platform accepts it, which the HTTP fast path reads by hand, what its `data` holds) derives
/// from `traits`, so a new type is declared here once and the compiler asks for its traits.
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
    case locationButtonSession
    case locationButtonResult

    /// What the type is (SPEC §1, §11, §12). Read on every event (the reducer's family check,
    /// the batch reader), so built once per type rather than at each read.
    public var traits: EventTraits { Self.traitsTable[self] ?? declaredTraits }

    private static let traitsTable: [EventType: EventTraits] =
        Dictionary(uniqueKeysWithValues: allCases.map { ($0, $0.declaredTraits) })

    private var declaredTraits: EventTraits {
        switch self {
        case .contextReported:
            // Free text throughout (appVersion, keys, installId) and a platform's own fields.
            EventTraits(.both, reading: .decoderOnly, data: [
                "platform", "osVersion", "appVersion", "usageDescriptions", "temporaryUsagePurposeKeys", "defaultAccuracyReduced",
                "requireExplicitServiceSession", "backgroundLocationMode", "apiLevel", "targetSdk", "declaredPermissions", "installId",
                "fineOnlyForLocationButton",
            ])
        case .authorizationRequested: EventTraits(.apple, reading: .byHandUnless(["purposeKey"]), data: ["request", "purposeKey"])
        case .promptResponded: EventTraits(.apple, data: ["choice"])
        case .alwaysEventOccurred: EventTraits(.apple, data: ["service"])
        case .appStateChanged: EventTraits(.both, data: ["state", "backgroundIndicator", "foregroundService"])
        case .settingsChanged: EventTraits(.both, data: ["authorization", "preciseLocation"])
        case .locationServicesChanged: EventTraits(.both, data: ["enabled"])
        case .restrictionChanged: EventTraits(.apple, data: ["restricted"])
        case .statusObserved: EventTraits(.apple, data: ["status", "accuracy"])
        case .serviceSessionChanged:
            EventTraits(.apple, reading: .decoderOnly, data: ["session", "action", "requirement", "fullAccuracyPurposeKey"])
        case .backgroundActivityChanged: EventTraits(.apple, data: ["active"])
        case .diagnosticObserved: EventTraits(.apple, reading: .decoderOnly, data: ["source", "session", "flags"])
        case .permissionsRequested: EventTraits(.android, reading: .decoderOnly, data: ["permissions"])
        case .permissionsResult: EventTraits(.android, reading: .decoderOnly, data: ["granted", "denied", "rationale", "interrupted"])
        case .permissionsObserved: EventTraits(.android, reading: .decoderOnly, data: ["granted", "locationEnabled"])
        case .permissionsReset: EventTraits(.android, reading: .decoderOnly, data: ["reason"])
        // `cause` is free text with bounds of its own, and refused with `opened` or `closed`.
        case .locationButtonSession: EventTraits(.android, reading: .byHandUnless(["cause"]), data: ["state", "cause"])
        case .locationButtonResult: EventTraits(.android, data: ["granted"])
        }
    }

    /// Whether the rules of `family` accept the type; the others refuse it, naming `type`.
    public func isAccepted(by family: PlatformFamily) -> Bool { traits.families.contains(family) }
}

/// What an event type is, declared once beside its case (`EventType.traits`).
public struct EventTraits: Sendable, Hashable {
    /// How the HTTP fast path (the hand-written batch reader) may read the type's `data`.
    public enum Reading: Sendable, Hashable {
        /// Always by hand: plain values of closed vocabularies.
        case byHand
        /// By hand unless `data` carries one of these members: client text whose bounds and
        /// characters the Codable form checks.
        case byHandUnless(Set<String>)
        /// Never by hand: free text, sets or flags with rules of their own, which the Codable
        /// form checks and names in its errors.
        case decoderOnly
    }

    /// The platform families whose rules accept the type.
    public var families: Set<PlatformFamily>
    public var reading: Reading
    /// The members of its `data` object (SPEC §1, §11, §12); others are ignored and not stored.
    public var dataFields: [String]

    init(_ families: Set<PlatformFamily>, reading: Reading = .byHand, data: [String]) {
        self.families = families
        self.reading = reading
        self.dataFields = data
    }

    /// Whether the fast path may read this `data` by hand; `has` tells whether a member is present.
    public func readsByHand(has: (String) -> Bool) -> Bool {
        switch reading {
        case .byHand: true
        case .byHandUnless(let members): !members.contains(where: has)
        case .decoderOnly: false
        }
    }
}

extension Set where Element == PlatformFamily {
    static let apple: Set<PlatformFamily> = [.apple]
    static let android: Set<PlatformFamily> = [.android]
    static let both: Set<PlatformFamily> = [.apple, .android]
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
