/// An Android location permission as the manifest and the runtime name it (SPEC §12).
public enum AndroidPermission: String, Sendable, Hashable, Codable, CaseIterable, Comparable {
    /// ACCESS_COARSE_LOCATION: approximate location.
    case coarse
    /// ACCESS_FINE_LOCATION: precise location.
    case fine
    /// ACCESS_BACKGROUND_LOCATION (API 29+).
    case background
    /// FOREGROUND_SERVICE_LOCATION (API 34+): a manifest declaration, never requested.
    case foregroundServiceLocation
    /// USE_LOCATION_BUTTON (API 37+): a manifest declaration, never requested; the location
    /// button needs it (SPEC §12, "The location button"). Not among the four a context that never
    /// reported its manifest declares (`defaultDeclared`): an app must say it has it.
    case locationButton

    /// The manifest's name, as `missingKeys` and `failed(notDeclared)` name it.
    public var manifestName: String {
        switch self {
        case .coarse: "android.permission.ACCESS_COARSE_LOCATION"
        case .fine: "android.permission.ACCESS_FINE_LOCATION"
        case .background: "android.permission.ACCESS_BACKGROUND_LOCATION"
        case .foregroundServiceLocation: "android.permission.FOREGROUND_SERVICE_LOCATION"
        case .locationButton: "android.permission.USE_LOCATION_BUTTON"
        }
    }

    /// The runtime permissions an app can request.
    public static let requestable: Set<AndroidPermission> = [.coarse, .fine, .background]

    /// What the manifest of a device that never reported `declaredPermissions` declares (SPEC
    /// §12): the four location permissions, not `locationButton`, which is new in API 37.
    public static let defaultDeclared: Set<AndroidPermission> = [.coarse, .fine, .background, .foregroundServiceLocation]

    public static func < (lhs: AndroidPermission, rhs: AndroidPermission) -> Bool {
        (allCases.firstIndex(of: lhs) ?? 0) < (allCases.firstIndex(of: rhs) ?? 0)
    }
}

/// The foreground location grant: none, approximate (coarse) or precise (fine).
public enum ForegroundGrant: String, Sendable, Hashable, Codable, CaseIterable {
    case none
    case approximate
    case precise
}

/// What Android's rules keep for a device beyond the fields it shares with Core Location's
/// (SPEC §12: `foreground`, `background`, `denials`, `blocked`), and what D2-D6 need to read a
/// result: the permissions of the request on screen, and the last inferred While-using answer
/// that a lapse may correct. Kept together so that the gate's cache interns it with the context.
public struct AndroidPermissionState: Sendable, Hashable {
    public var foreground: ForegroundGrant = .none
    public var background = false
    public var foregroundDenials = 0
    public var backgroundDenials = 0
    public var foregroundBlocked = false
    public var backgroundBlocked = false
    /// D11: denials of precise location (API 31+, targetSdk 31+): "Keep approximate" at the
    /// upgrade dialog, or Settings' precise switch turned off.
    public var preciseDenials = 0
    /// D11: the second precise denial blocks precise: a request for `fine` while approximate is
    /// granted returns at once, and only Settings can turn precise on.
    public var preciseBlocked = false
    /// The permissions the prompt on screen asked for (D2-D4).
    public var pendingRequest: Set<AndroidPermission> = []
    /// D6: the last `foreground` answer inferred as a While-using form, which a lapse corrects
    /// to its `Once` form; nil once a Settings change, a reset or an observation settled it.
    public var correctableAnswer: PromptChoice?
    /// D6: the app left the foreground since that answer.
    public var leftForegroundSinceAnswer = false
    /// B3, B4, B7: consent dialogs of the location button answered Allow, 0 to
    /// `consentsForDirectGrant`: AOSP records TRUSTED_UI_SHOWN at the first and
    /// TRUSTED_UI_CONSENTED at the second, and from then on a tap grants with no dialog.
    public var buttonConsents = 0
    /// B1: a location button session is open (the button is on screen).
    public var locationButtonSession = false
    /// B3, B6: the foreground grant is the location button's one-time grant, which the app knows
    /// will end with the session (the state's `temporary`), unlike a dialog's (D6).
    public var buttonGrant = false
    /// B3, B6: approximate location was held persistently when the button granted precise: AOSP
    /// then grants only FINE one-time, and a lapse leaves approximate.
    public var approximateUnderButton = false
    /// B7: the last Settings choice was "Don't allow" (`never`) and nothing granted the foreground
    /// since; an `askEveryTime` then changes the one-time flag, and AOSP clears the consent.
    public var neverInSettings = false

    public init() {}

    /// A denial count above this adds nothing: the block follows the second (D5).
    static let maxCountedDenials = 99

    /// B3: the consent dialogs answered Allow after which a tap grants at once. Two in AOSP
    /// since "Location button 2 prompt changes" (SHOWN, then CONSENTED); the documentation says
    /// one ("after the initial consent"). One constant, so that a PermissionController that
    /// goes back to one step is one change.
    public static let consentsForDirectGrant = 2
}

/// `permissionsResult.data`: `onRequestPermissionsResult`.
public struct PermissionsResult: Sendable, Hashable {
    public var granted: Set<AndroidPermission>
    public var denied: Set<AndroidPermission>
    /// The permissions for which `shouldShowRequestPermissionRationale` is true afterwards;
    /// nil when the app did not report it.
    public var rationale: Set<AndroidPermission>?
    /// The request was interrupted (empty arrays): no answer, nothing changes.
    public var interrupted: Bool

    public init(granted: Set<AndroidPermission>, denied: Set<AndroidPermission>, rationale: Set<AndroidPermission>? = nil, interrupted: Bool = false) {
        self.granted = granted
        self.denied = denied
        self.rationale = rationale
        self.interrupted = interrupted
    }
}

/// Why Android reset an app's permissions (`permissionsReset.reason`).
public enum PermissionsResetReason: String, Sendable, Hashable, Codable, CaseIterable {
    /// App hibernation: the app went unused for months (D8).
    case unusedApp
}
