/// Android's rules (SPEC §12, ids D1-D11 and I1): the second platform behind `PlatformRules`. Android's
/// own state (`DeviceState.android`) is mapped onto the shared fields after every event, so that
/// the status, the gate's table and the analytics stay one for both platforms. The rules are
/// methods of `DeviceState` in `DeviceState+AndroidRules.swift` (context, requests,
/// observations), `DeviceState+AndroidAnswers.swift` and `DeviceState+AndroidSettings.swift`;
/// the gate is in `AndroidRules+Gate.swift`.
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
        default:
            // Apple's types: `DeviceState.apply` refuses them before (`EventType.traits`).
            throw AuthorizationRejection.notAccepted(event.type, by: .android, on: next.context.effectivePlatform)
        }
        next.syncAndroidMapping()
        if before.status != next.status {
            effects.append(.statusChanged(from: before.status, to: next.status))
        }
        if before.effectiveAccuracy != next.effectiveAccuracy {
            effects.append(.accuracyChanged(from: before.effectiveAccuracy, to: next.effectiveAccuracy))
        }
        if case .permissionsRequested = event, effects.isEmpty {
            effects.append(.noEffect(.unchanged))
        }
        state = next
        return effects
    }
}
