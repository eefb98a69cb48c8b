/// The gate's location button rows (SPEC §12, "The location button", Gating), applied last to
/// the decision that §4, §12 and §15 gave, the accuracy row included. Why: Google Play requires
/// the button, for apps targeting API 37, for one-off location uses, and the manifest may make
/// the runtime dialog unable to grant precise at all (B8); a gate that still answered
/// `requestForeground` or `requestPrecise` would send the app to a dialog Play forbids or that
/// cannot grant what the feature needs.
extension AndroidRules {
    public static func finish(_ decision: inout GateDecision, for feature: Feature, tier: Tier, state: DeviceState) {
        // The operator's rows (§15) decide whatever the device holds.
        if decision.reason == .disabledByOperator || decision.reason == .appVersionTooOld { return }
        let android = state.android
        let context = state.context
        let sessionScoped = feature.isSessionScoped(tier: tier)
        if android.buttonGrant {
            // A decision's `temporary` is true only where the feature would not be enabled
            // without the button's one-time grant.
            let enabledWithout = verdict(for: feature, tier: tier, state: state.withoutButtonGrant).reason == .authorized
            decision.temporary = !enabledWithout
            // The background, Always or region monitoring are never served by a grant that ends
            // when the app leaves the foreground: as an iOS Allow Once (A5's row).
            if decision.enabled && !enabledWithout && !sessionScoped {
                decision.enabled = false
                decision.reason = .temporaryAuthorization
                decision.action = .none
                return
            }
        }
        guard !decision.enabled else { return }
        // The button in place of the dialog, for a session-scoped feature that needs precise,
        // where the button is available and the foreground group not blocked. While precise is
        // blocked the button answers `false` with no dialog (AOSP NOT_GRANTABLE): Settings.
        // `accuracy: any` keeps `requestForeground` (Play: ask for approximate when precise is
        // not needed).
        if sessionScoped && feature.accuracy == .full && context.locationButtonAvailable && !android.foregroundBlocked
            && (decision.action == .requestForeground || decision.action == .requestPrecise) {
            decision.action = android.preciseBlocked ? .openSettings : .showLocationButton
            return
        }
        // FINE only for the button (B8): a feature that needs precise which the button cannot
        // serve (not session-scoped, or no button) can get it from Settings alone.
        let buttonServes = sessionScoped && context.locationButtonAvailable
        let holdsPrecisePersistently = android.foreground == .precise && !android.buttonGrant
        if context.fineOnlyForLocationButtonInForce && feature.needsFullAccuracy && !buttonServes && !holdsPrecisePersistently
            && (decision.reason == .notDetermined || decision.reason == .denied || decision.reason == .reducedAccuracy) {
            decision.reason = .preciseOnlyViaButton
            decision.action = .none
        }
    }
}

extension Feature {
    /// SPEC §12: a feature the location button's one-session grant can serve: tier `whenInUse`,
    /// no locations in the background, no region monitoring (geofences outlive the session).
    public func isSessionScoped(tier: Tier) -> Bool {
        tier == .whenInUse && !background && !services.contains(.regionMonitoring)
    }
}
