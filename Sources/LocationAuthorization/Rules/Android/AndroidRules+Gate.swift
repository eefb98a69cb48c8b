/// The gate on Android (SPEC §12): §4's table through the mapped status, with Android's actions,
/// the manifest in place of usage descriptions, the block, and the background permission in place
/// of the one Always escalation.
extension AndroidRules {
    /// Always if the feature says so or uses location push; geofencing (`regionMonitoring`) needs
    /// the background permission on API 29+.
    public static func requiredTier(of feature: Feature, state: DeviceState) -> Tier {
        if feature.requires == .always || feature.services.contains(.locationPush) { return .always }
        if feature.services.contains(.regionMonitoring) && state.context.androidAPILevel >= 29 { return .always }
        return .whenInUse
    }

    public static func verdict(for feature: Feature, tier: Tier, state: DeviceState) -> GateVerdict {
        if feature.unavailableService(on: .android) != nil { return GateVerdict(.serviceUnavailable, .none) }
        if !state.locationServicesEnabled { return GateVerdict(.locationServicesDisabled, .enableLocationServices) }
        let missing = missingManifestPermissions(for: feature, tier: tier, context: state.context)
        if !missing.isEmpty {
            return GateVerdict(.missingUsageDescription, .fixUsageDescriptions, missingKeys: missing.map(\.manifestName))
        }
        let android = state.android
        if android.foreground == .none && android.foregroundBlocked { return GateVerdict(.blocked, .openSettings) }
        let verdict = grantVerdict(for: feature, tier: tier, state: state)
        if verdict.reason != .authorized && verdict.reason != .blocked && state.pendingPrompt != nil {
            return GateVerdict(.awaitingResponse, .none)
        }
        return verdict
    }

    private static func grantVerdict(for feature: Feature, tier: Tier, state: DeviceState) -> GateVerdict {
        let android = state.android
        let api = state.context.androidAPILevel
        if android.foreground == .none {
            // Denied once but not blocked: the app may ask again.
            return android.foregroundDenials > 0 ? GateVerdict(.denied, .requestForeground) : GateVerdict(.notDetermined, .requestForeground)
        }
        if tier == .always && !android.background && api >= 29 {
            if android.backgroundBlocked { return GateVerdict(.blocked, .openSettings) }
            return GateVerdict(.needsAlways, api == 29 ? .requestBackground : .openBackgroundSettings)
        }
        if feature.needsFullAccuracy && android.foreground == .approximate {
            // D11: a blocked precise is answered at once; only Settings can turn it on.
            return GateVerdict(.reducedAccuracy, android.preciseBlocked ? .openSettings : .requestPrecise)
        }
        return .authorized
    }

    /// What the manifest must declare for the feature: `coarse` or `fine`, `fine` for full
    /// accuracy or geofencing, `background` for tier Always on API 29+.
    static func missingManifestPermissions(for feature: Feature, tier: Tier, context: DeviceContext) -> [AndroidPermission] {
        let declared = context.declaredAndroidPermissions
        var missing: [AndroidPermission] = []
        let needsFine = feature.needsFullAccuracy
        if needsFine {
            if !declared.contains(.fine) { missing.append(.fine) }
        } else if declared.isDisjoint(with: [.coarse, .fine]) {
            missing.append(.coarse)
        }
        if tier == .always && context.androidAPILevel >= 29 && !declared.contains(.background) { missing.append(.background) }
        return missing
    }
}

extension DeviceContext {
    /// The API level Android's rules use: the current one (35) until reported.
    public var androidAPILevel: Int { apiLevel ?? 35 }

    /// The targetSdk Android's rules use: the API level until reported.
    public var androidTargetSdk: Int { targetSdk ?? androidAPILevel }

    /// The manifest's location permissions; the four of `AndroidPermission.defaultDeclared`
    /// until reported (SPEC §12: `locationButton` is not among them).
    public var declaredAndroidPermissions: Set<AndroidPermission> { declaredPermissions ?? AndroidPermission.defaultDeclared }

    /// SPEC §12: the location button is available on API 37 or later to an app that declares
    /// USE_LOCATION_BUTTON and ACCESS_FINE_LOCATION (the guide: "declare the standard location
    /// permissions along with the dedicated USE_LOCATION_BUTTON permission").
    public var locationButtonAvailable: Bool {
        androidAPILevel >= LocationButton.firstAPILevel && declaredAndroidPermissions.isSuperset(of: [.locationButton, .fine])
    }

    /// B8 and the gate: FINE is only for the location button, and the platform enforces it: API
    /// 37+ (the flag is new there) and targetSdk 31+ (AOSP's LocationGrantBehavior reads it
    /// only where the accuracy dialog exists).
    public var fineOnlyForLocationButtonInForce: Bool {
        fineOnlyForLocationButton == true && androidAPILevel >= LocationButton.firstAPILevel && androidTargetSdk >= 31
    }
}
