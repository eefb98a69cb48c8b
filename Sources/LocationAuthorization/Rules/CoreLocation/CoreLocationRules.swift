/// Core Location's rules (SPEC §2-§4, ids A, P, E, S, T, G, O, K, C; §11, ids V): the first
/// platform behind `PlatformRules`. The rules themselves are methods of `DeviceState` in
/// `DeviceState+CoreLocationRules.swift` and `DeviceState+ServiceSessionRules.swift`, each
/// citing its id; the gate's table is in `CoreLocationRules+Gate.swift`.
public enum CoreLocationRules: PlatformRules {
    /// V1's relaunch window closes before the event, the event's own rule applies, then V2 asks
    /// for an active session's unmet goal. Every rule checks what can reject before it changes
    /// anything, so a rejected event leaves the state as it was; only a closing relaunch window
    /// (rare) changes the state before the rule, on a copy.
    public static func apply(_ event: LocationEvent, to state: inout DeviceState) throws(AuthorizationRejection) -> [Effect] {
        var effects: [Effect]
        if state.sessionState.relaunchWindowOpen {
            var next = state
            effects = next.closeRelaunchWindow(before: event)
            effects += try applyRule(event, to: &next)
            state = next
        } else {
            effects = try applyRule(event, to: &state)
        }
        state.endPromptsThatNeedAGrant()
        effects += state.askForSessionGoals()
        return effects
    }

    private static func applyRule(_ event: LocationEvent, to state: inout DeviceState) throws(AuthorizationRejection) -> [Effect] {
        let before = state
        var effects: [Effect]
        var needsEffect = true
        switch event {
        case .contextReported(let report):
            effects = try state.applyContext(report)
            needsEffect = false
        case .authorizationRequested(let request):
            effects = try state.applyRequest(request)
        case .promptResponded(let choice):
            effects = try state.applyResponse(choice)
        case .alwaysEventOccurred:
            effects = state.applyAlwaysEvent()
        case .appStateChanged(let appState, let indicator, let service):
            if service != nil {
                throw AuthorizationRejection(
                    .notOnThisPlatform, "data.foregroundService: an Apple app reports backgroundIndicator instead",
                    field: "data.foregroundService")
            }
            effects = state.applyAppState(appState, backgroundIndicator: indicator)
            needsEffect = false
        case .settingsChanged(let authorization, let preciseLocation):
            try state.applySettings(authorization: authorization, preciseLocation: preciseLocation)
            effects = []
            needsEffect = false
        case .locationServicesChanged(let enabled):
            // G1: the app's own grant is untouched and returns when Location Services do.
            state.locationServicesEnabled = enabled
            effects = []
            needsEffect = false
        case .restrictionChanged(let restricted):
            // G2: likewise for parental controls and device management.
            state.restricted = restricted
            effects = []
            needsEffect = false
        case .statusObserved(let status, let accuracy):
            return state.applyObservation(status, accuracy: accuracy)
        case .serviceSessionChanged(let change):
            effects = try state.applySessionChange(change)
            needsEffect = false
        case .backgroundActivityChanged(let active):
            effects = state.applyBackgroundActivity(active: active)
            needsEffect = false
        case .diagnosticObserved(let diagnostic):
            return state.applyDiagnostic(diagnostic)
        case .permissionsRequested, .permissionsResult, .permissionsObserved, .permissionsReset, .locationButtonSession,
            .locationButtonResult:
            // Android's types, listed so that a new type is a compile error here until its
            // rule is written: `DeviceState.apply` refuses them before (`EventType.traits`).
            throw AuthorizationRejection.notAccepted(event.type, by: .apple, on: state.context.effectivePlatform)
        }
        if state.authorization != .authorizedWhenInUse { state.inferredAllowWhileUsing = false }
        if before.status != state.status {
            effects.append(.statusChanged(from: before.status, to: state.status))
        }
        if before.effectiveAccuracy != state.effectiveAccuracy {
            effects.append(.accuracyChanged(from: before.effectiveAccuracy, to: state.effectiveAccuracy))
        }
        // A request, an answer and an Always event always yield at least one effect (SPEC §3).
        if needsEffect && effects.isEmpty {
            effects.append(.noEffect(.unchanged))
        }
        return effects
    }
}

extension DeviceState {
    /// S1: a pending `alwaysUpgrade`, `alwaysSecond` or `fullAccuracy` ends whenever the
    /// authorization becomes notDetermined (by S1, O1 or V4); a `whenInUse` or first Always
    /// prompt may still be on screen and stays.
    mutating func endPromptsThatNeedAGrant() {
        guard authorization == .notDetermined, let prompt = pendingPrompt else { return }
        switch prompt {
        case .alwaysUpgrade, .alwaysSecond, .fullAccuracy: pendingPrompt = nil
        case .whenInUse, .alwaysFirst, .legacyAlways, .foreground, .backgroundDialog, .backgroundSettings, .precise, .locationButton: break
        }
    }

    /// Whether the app counts as in use: macOS apps always do (004), so S1 never applies there;
    /// a held background activity session counts as use (V5).
    public var isInUse: Bool {
        context.effectivePlatform == .macOS || inUse || sessionState.backgroundActivity
    }
}
