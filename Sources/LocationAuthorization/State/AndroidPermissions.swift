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

    /// The manifest's name, as `missingKeys` and `failed(notDeclared)` name it.
    public var manifestName: String {
        switch self {
        case .coarse: "android.permission.ACCESS_COARSE_LOCATION"
        case .fine: "android.permission.ACCESS_FINE_LOCATION"
        case .background: "android.permission.ACCESS_BACKGROUND_LOCATION"
        case .foregroundServiceLocation: "android.permission.FOREGROUND_SERVICE_LOCATION"
        }
    }

    /// The runtime permissions an app can request.
    public static let requestable: Set<AndroidPermission> = [.coarse, .fine, .background]

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

    public init() {}

    /// A denial count above this adds nothing: the block follows the second (D5).
    static let maxCountedDenials = 99
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
