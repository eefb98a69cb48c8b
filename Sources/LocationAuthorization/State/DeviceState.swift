/// The authorization state of one device of one user of one app (SPEC §2): what Core Location
/// holds for the app, plus what the app told us about the device.
public struct DeviceState: Sendable, Hashable {
    /// The app's own grant. Restriction and the Location Services switch live apart from it
    /// so that it returns when they are undone (G1, G2).
    public var authorization: Authorization = .notDetermined
    /// Always granted provisionally, pending the second prompt (000 "Provisional Always").
    public var provisional = false
    /// When In Use granted with Allow Once: it expires when the app stops being in use (S1).
    public var temporary = false
    /// The one Always escalation has been spent (A3, A4, A6, A10, A11).
    public var alwaysPromptUsed = false
    /// The prompt on screen, if any.
    public var pendingPrompt: Prompt?
    /// The accuracy the person chose (Precise Location in Settings).
    public var accuracy: Accuracy = .full
    /// Full accuracy granted for this session by the fullAccuracy prompt (P6).
    public var temporaryFullAccuracy = false
    public var locationServicesEnabled = true
    public var restricted = false
    /// Foreground, or background with the location indicator (S1). macOS apps are always in use.
    public var inUse = true
    /// The last `appStateChanged` was `foreground`, or none came yet: V2 asks only then, and V5
    /// starts a background activity only then.
    public var inForeground = true
    /// O2: the last answer to a `whenInUse` prompt was inferred as Allow While Using from an
    /// observation, where Allow Once looks the same; a later `notDetermined` with no Settings
    /// change in between corrects it. Lives while the grant stays When In Use.
    public var inferredAllowWhileUsing = false
    public var context = DeviceContext()
    /// I1: the `installId` of the stream's last context that carried one. A new one means the
    /// app was reinstalled. Kept here, not in `context`, so that contexts stay shared between
    /// devices in the gate's cache, which does not hold it (gates never read it).
    public var installID: String?
    /// Service sessions, the background activity session and monitoring limits (SPEC §11).
    public var sessionState = ServiceSessionState()
    /// Android's permissions (SPEC §12); the shared fields above hold their mapping.
    public var android = AndroidPermissionState()

    public init() {}

    /// What `CLLocationManager.authorizationStatus` reports (SPEC §2): restricted first, then
    /// denied when Location Services are off or the app is denied, else the app's grant.
    /// Provisional Always reports authorizedAlways and Allow Once authorizedWhenInUse (000).
    public var status: AuthorizationStatus {
        if restricted { return .restricted }
        if !locationServicesEnabled { return .denied }
        switch authorization {
        case .notDetermined: return .notDetermined
        case .denied: return .denied
        case .authorizedWhenInUse: return .authorizedWhenInUse
        case .authorizedAlways: return .authorizedAlways
        }
    }

    /// The accuracy apps see: full while temporary full accuracy lasts.
    public var effectiveAccuracy: Accuracy {
        temporaryFullAccuracy ? .full : accuracy
    }

    /// The part of the state that history shows before and after each event (SPEC §5).
    public var summary: StatusSummary {
        StatusSummary(status: status, provisional: provisional, temporary: temporary, accuracy: effectiveAccuracy)
    }
}

/// `before` / `after` in history: `status, provisional, temporary, accuracy`.
public struct StatusSummary: Sendable, Hashable, Codable {
    public var status: AuthorizationStatus
    public var provisional: Bool
    public var temporary: Bool
    public var accuracy: Accuracy

    public init(status: AuthorizationStatus, provisional: Bool, temporary: Bool, accuracy: Accuracy) {
        self.status = status
        self.provisional = provisional
        self.temporary = temporary
        self.accuracy = accuracy
    }
}
