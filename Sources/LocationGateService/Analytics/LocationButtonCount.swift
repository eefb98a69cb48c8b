import LocationAuthorization

/// What one location button event counts as in `GET /v1/analytics/location-button` (SPEC §12,
/// "The location button", its Analytics paragraph). Decided at the append from the event and
/// the effects the rules gave it (B1-B4), and stored in the event's outcome
/// (`EventAnalytics.locationButton`), so that the rollup, an erasure's kept counters and a
/// replay all count what the append computed. A `closed` session counts for nothing.
///
/// The stored value is needed: an `opened` session while one is open and a `closed` one while
/// none is both yield noEffect `unchanged` (B1), so the effects alone cannot tell them apart.
public enum LocationButtonCount: String, Sendable, Hashable, Codable, CaseIterable {
    /// B1 `opened`: the button was on screen (`onSessionOpened`).
    case opened
    /// B1 `failed` (`onSessionError`), with or without its cause.
    case failed
    /// B2: a grant while precise was held.
    case alreadyGranted
    /// B3, B4: the consent dialog was on screen (inferred), answered `allow` or `dontAllow`.
    case prompted
    /// B3: a grant without the dialog (after two consents).
    case direct
    /// B4: a refusal while the foreground group or precise was blocked (the button showed nothing).
    case blocked
    /// B4: a refusal where a direct grant was due: device policy refused it.
    case notGrantable
    /// B4: a refusal from an app targeting below API 31, which counts no denial and changes
    /// nothing (noEffect `unchanged`): none of the above, so it counts among `results` alone.
    case unchanged

    /// The rollups' metric of these counts; each field of the row is a key of it.
    static let metric = "locationButton"

    /// The fields of a location button row, in their order (SPEC §12). `results` counts every
    /// `locationButtonResult`: `alreadyGranted` + `prompted` + `direct` + `blocked` +
    /// `notGrantable` (+ the refusals below targetSdk 31); `denied`, B4's `dontAllow`, is a part
    /// of `prompted`.
    public static let fields = [
        "sessions", "failures", "results", "prompted", "direct", "alreadyGranted", "denied", "blocked", "notGrantable",
    ]

    /// What an event counts as; nil for an event that is not the button's, and for a closed
    /// session.
    static func of(_ event: LocationEvent, effects: [Effect]) -> LocationButtonCount? {
        switch event {
        case .locationButtonSession(let state, _):
            switch state {
            case .opened: return .opened
            case .failed: return .failed
            case .closed: return nil
            }
        case .locationButtonResult(let granted):
            // B3 and B4 say where the dialog showed with `promptShown(locationButton)`.
            if effects.contains(.promptShown(.locationButton)) { return .prompted }
            if effects.contains(.noEffect(.alreadyGranted)) { return .alreadyGranted }
            if effects.contains(.noEffect(.blocked)) { return .blocked }
            if effects.contains(.noEffect(.notGrantable)) { return .notGrantable }
            return granted ? .direct : .unchanged
        default:
            return nil
        }
    }

    /// The fields (`fields`) this event adds one to. `choice` is the consent dialog's inferred
    /// answer: B4's `dontAllow` is also a denial.
    func counted(choice: PromptChoice?) -> [String] {
        switch self {
        case .opened: ["sessions"]
        case .failed: ["failures"]
        case .prompted: choice == .dontAllow ? ["results", "prompted", "denied"] : ["results", "prompted"]
        case .direct: ["results", "direct"]
        case .alreadyGranted: ["results", "alreadyGranted"]
        case .blocked: ["results", "blocked"]
        case .notGrantable: ["results", "notGrantable"]
        case .unchanged: ["results"]
        }
    }
}
