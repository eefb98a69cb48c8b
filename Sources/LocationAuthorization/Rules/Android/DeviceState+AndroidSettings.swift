/// Android's Settings, resets and the app's use state (SPEC §12: D7, D8, D10, with D11's precise
/// switch and the location button's B1, B6, B7). What Settings records follows AOSP's
/// AppPermissionViewModel, which revokes with userFixed false: a Settings revocation is one
/// denial (USER_SET), never a block (USER_FIXED).
extension DeviceState {
    /// D7: the app's location page in Settings.
    mutating func applyAndroidSettings(authorization setting: SettingsAuthorization?, preciseLocation: Bool?) throws(AuthorizationRejection) {
        if setting == .askNextTime {
            throw AuthorizationRejection(
                .notOnThisPlatform, "data.authorization: askNextTime is Apple's; Android's Settings offer always, whileUsing, askEveryTime, never",
                field: "data.authorization")
        }
        android.correctableAnswer = nil
        android.leftForegroundSinceAnswer = false
        // B7: what decides whether Settings clears the button's consent (AOSP's
        // `revokeRuntimePermission` clears TRUSTED_UI_SHOWN and _CONSENTED).
        let foregroundHeld = android.foreground != .none
        let afterNever = android.neverInSettings
        if setting != nil { android.neverInSettings = setting == .never }
        switch setting {
        case .always:
            grantForegroundInSettings()
            android.background = true
            android.foregroundBlocked = false
            android.backgroundBlocked = false
        case .whileUsing:
            let backgroundHeld = android.background && android.foreground != .none
            grantForegroundInSettings()
            android.foregroundBlocked = false
            // "Allow only while using the app" revokes background, and a blocked background
            // becomes one denial: the app may ask again.
            if context.androidAPILevel >= 29 && (backgroundHeld || android.backgroundBlocked) { revokeBackgroundInSettings() }
            android.background = false
        case .askEveryTime:
            // AOSP revokes with the one-time flag and clears USER_SET (precise's included): ask
            // again. B7: the consent clears where this revokes a grant or follows "Don't allow"
            // (the one-time flag changes); the button's session is the app's, not Settings'.
            let kept = android
            android = AndroidPermissionState()
            android.locationButtonSession = kept.locationButtonSession
            android.buttonConsents = foregroundHeld || afterNever ? 0 : kept.buttonConsents
        case .never:
            // Each group that is granted, and a blocked background, is revoked with one denial
            // and no block; a foreground group not granted keeps its denials and block.
            if android.foreground != .none {
                android.foreground = .none
                android.foregroundDenials = 1
                android.foregroundBlocked = false
                // B7: a revoked grant clears the button's consent.
                android.buttonConsents = 0
            }
            if context.androidAPILevel >= 29 && (android.background || android.backgroundBlocked) { revokeBackgroundInSettings() }
            android.background = false
        case .askNextTime, nil:
            break
        }
        if setting != nil {
            pendingPrompt = nil
            android.pendingRequest = []
        }
        // B6: a Settings grant makes the foreground grant persistent.
        if setting == .always || setting == .whileUsing {
            android.buttonGrant = false
            android.approximateUnderButton = false
        }
        if let preciseLocation, android.foreground != .none {
            // B7: the precise switch turned off revokes FINE through the same function; B6: a
            // button grant switched to approximate still lapses (`buttonGrant` stays).
            if !preciseLocation { android.buttonConsents = 0 }
            if preciseLocation {
                // D11: the switch turned on clears precise's denials and block.
                android.foreground = .precise
                android.preciseDenials = 0
                android.preciseBlocked = false
            } else if android.foreground == .precise {
                android.foreground = .approximate
                countPreciseDenial()
            }
        }
    }

    /// A Settings grant of the foreground group: precise when `fine` is declared (the precise
    /// switch starts on), approximate otherwise; an existing grant keeps its accuracy. A grant
    /// of precise clears precise's block, as a grant clears its group's.
    private mutating func grantForegroundInSettings() {
        if android.foreground == .none {
            grantForeground(context.declaredAndroidPermissions.contains(.fine) ? .precise : .approximate)
        }
        if android.foreground == .precise { android.preciseBlocked = false }
    }

    /// One denial of the background group, its block cleared (USER_SET, not USER_FIXED).
    private mutating func revokeBackgroundInSettings() {
        android.background = false
        android.backgroundDenials = 1
        android.backgroundBlocked = false
    }

    /// D8: after months unused every grant returns to none, and the app may ask again; B7: the
    /// button's consent clears too (AOSP's AutoRevokePermissions). The button's session is the
    /// app's and stays.
    mutating func applyPermissionsReset() {
        let session = android.locationButtonSession
        android = AndroidPermissionState()
        android.locationButtonSession = session
        pendingPrompt = nil
    }

    /// The app's use state; D10: with targetSdk 34+ on API 34+, a location foreground service
    /// needs a foreground grant and the `foregroundServiceLocation` declaration (AOSP's
    /// ForegroundServiceTypePolicy enforces both only for apps targeting 34+); a refused start
    /// leaves the app out of use. D6's clock starts when the app leaves the foreground without
    /// such a service, or terminates.
    mutating func applyAndroidAppState(_ state: AppState, foregroundService: Bool) -> [Effect] {
        var effects: [Effect] = []
        var serviceRuns = foregroundService
        if foregroundService && context.androidAPILevel >= 34 && context.androidTargetSdk >= 34 {
            let undeclared = !context.declaredAndroidPermissions.contains(.foregroundServiceLocation)
            if undeclared || android.foreground == .none {
                effects.append(.failed(.foregroundServiceNotAllowed, keys: undeclared ? [AndroidPermission.foregroundServiceLocation.manifestName] : []))
                serviceRuns = false
            }
        }
        inForeground = state == .foreground
        inUse = state == .foreground || (state == .background && serviceRuns)
        // B1: a terminated app holds no button session.
        if state == .terminated && android.locationButtonSession {
            android.locationButtonSession = false
            effects.append(.sessionChanged(session: LocationButton.sessionKey, active: false))
        }
        if android.correctableAnswer != nil && (state == .terminated || (state == .background && !serviceRuns)) {
            android.leftForegroundSinceAnswer = true
        }
        return effects
    }
}
