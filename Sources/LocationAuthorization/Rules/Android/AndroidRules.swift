/// Android's rules (SPEC §12, ids D1-D11, I1 and the location button's B1-B8): the second
/// platform behind `PlatformRules`. Android's own state (`DeviceState.android`) is mapped onto
/// the shared fields after every event, so that the status, the gate's table and the analytics
/// stay one for both platforms. The rules are methods of `DeviceState` in
/// `DeviceState+AndroidRules.swift` (context, requests, observations),
/// `DeviceState+AndroidAnswers.swift`, `DeviceState+AndroidSettings.swift` and
/// `DeviceState+LocationButton.swift`; the gate is in `AndroidRules+Gate.swift` and
/// `AndroidRules+LocationButtonGate.swift`.
public enum AndroidRules: PlatformRules {
    public static func apply(_ event: LocationEvent, to state: inout DeviceState) throws(AuthorizationRejection) -> [Effect] {
        var next = state
        let before = next
        var effects: [Effect]
        switch event {
        case .contextReported(let report):
            effects = try next.applyAndroidContext(report)
        case .permissionsRequested(let permissions):
            effects = next.applyPermissionsRequest(permissions)
        case .permissionsResult(let result):
            effects = next.applyPermissionsResult(result)
            state = next
            return effects
        case .permissionsObserved(let granted, let locationEnabled):
            effects = next.reconcilePermissions(granted: granted, locationEnabled: locationEnabled)
            state = next
            return effects
        case .permissionsReset:
            next.applyPermissionsReset()
            effects = []
        case .appStateChanged(let appState, let indicator, let service):
            if indicator {
                throw AuthorizationRejection(
                    .notOnThisPlatform, "data.backgroundIndicator: an Android app reports foregroundService instead",
                    field: "data.backgroundIndicator")
            }
            effects = next.applyAndroidAppState(appState, foregroundService: service ?? false)
        case .settingsChanged(let authorization, let preciseLocation):
            try next.applyAndroidSettings(authorization: authorization, preciseLocation: preciseLocation)
            effects = []
        case .locationServicesChanged(let enabled):
            next.locationServicesEnabled = enabled
            effects = []
        case .locationButtonSession(let sessionState, let cause):
            try next.requireLocationButton(event.type)
            effects = next.applyLocationButtonSession(sessionState, cause: cause)
        case .locationButtonResult(let granted):
            try next.requireLocationButton(event.type)
            effects = next.applyLocationButtonResult(granted: granted)
        case .authorizationRequested, .promptResponded, .alwaysEventOccurred, .restrictionChanged, .statusObserved,
            .serviceSessionChanged, .backgroundActivityChanged, .diagnosticObserved:
            // Apple's types, listed so that a new type is a compile error here until its rule
            // is written: `DeviceState.apply` refuses them before (`EventType.traits`).
            throw AuthorizationRejection.notAccepted(event.type, by: .android, on: next.context.effectivePlatform)
        }
        next.syncAndroidMapping()
        if before.status != next.status {
            effects.append(.statusChanged(from: before.status, to: next.status))
        }
        if before.effectiveAccuracy != next.effectiveAccuracy {
            effects.append(.accuracyChanged(from: before.effectiveAccuracy, to: next.effectiveAccuracy))
        }
        switch event {
        case .permissionsRequested, .locationButtonResult:
            // A request and a result always yield at least one effect (SPEC §3), also a grant
            // that changes nothing the app can see (the location switch off).
            if effects.isEmpty { effects.append(.noEffect(.unchanged)) }
        default:
            break
        }
        state = next
        return effects
    }
}

extension DeviceState {
    /// SPEC §12: a location button event from a device where the button is not available (API
    /// below 37, or `locationButton` or `fine` not declared) is a 422 `ruleViolation`; below 37
    /// the Jetpack button falls back to the ordinary dialog, reported as `permissionsRequested`
    /// and `permissionsResult`.
    func requireLocationButton(_ type: EventType) throws(AuthorizationRejection) {
        guard !context.locationButtonAvailable else { return }
        let declared = context.declaredAndroidPermissions
        let missing = [AndroidPermission.locationButton, .fine].filter { !declared.contains($0) }.map(\.rawValue)
        let why = context.androidAPILevel < LocationButton.firstAPILevel
            ? "this device reports API \(context.androidAPILevel)"
            : "this app does not declare " + missing.joined(separator: " or ")
        throw AuthorizationRejection(
            .locationButtonUnavailable,
            "\(type.rawValue): the location button needs API \(LocationButton.firstAPILevel) or later and locationButton and fine declared; \(why)")
    }
}
