/// Android 17's location button (SPEC §12, "The location button"): a button that SystemUI draws
/// inside the app and that grants precise location for one session without the runtime dialog
/// (`android.app.permissionui.LocationButtonClient`; Jetpack `androidx.core.locationbutton`).
/// Its rules are B1-B8 (`DeviceState+LocationButton.swift`), its gate rows in
/// `AndroidRules+LocationButtonGate.swift`.
public enum LocationButton {
    /// The session name of B1's `sessionChanged` effect. A fixed name, not a key the app chose:
    /// an app has one button session at a time as far as the rules are concerned.
    public static let sessionKey = "locationButton"

    /// The first API level with the button (Android 17).
    public static let firstAPILevel = 37

    /// SPEC §12: `cause` is 1 to 128 bytes of `[A-Za-z0-9._$-]` (a Java class name).
    public static let causeBytes = 1...128
}

/// `locationButtonSession.state` (B1): what `LocationButtonClient` told the app about the
/// button's session.
public enum LocationButtonSessionState: String, Sendable, Hashable, Codable, CaseIterable {
    /// `onSessionOpened`: the button is on screen.
    case opened
    /// The app called `close()` (Jetpack: the view was detached).
    case closed
    /// `onSessionError(Throwable)`: the session could not be created or was lost; Android closed
    /// it before the call.
    case failed
}
