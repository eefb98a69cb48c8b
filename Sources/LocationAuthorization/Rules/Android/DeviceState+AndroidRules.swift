/// Android's rules (SPEC §12): the mapping, the context (D1, I1), requests (D1-D5, D11's block,
/// B8) and observations (D6, D9, B6). Answers are in `DeviceState+AndroidAnswers.swift`, Settings, resets
/// and the app's state (D7, D8, D10) in `DeviceState+AndroidSettings.swift`. Sources:
/// developer.android.com's location and runtime permission pages, the Android 10/11/12/14
/// behaviour changes, app hibernation, and AOSP's PermissionController, summed up with their
/// addresses in `docs/rules.md`.
extension DeviceState {
    // MARK: - Mapping

    /// The shared fields from Android's: foreground none is denied once denied or blocked, else
    /// notDetermined; a foreground grant with background (or below API 29, where there is no
    /// separate background permission) is authorizedAlways, without it authorizedWhenInUse.
    /// Precise is full accuracy, approximate reduced. `temporary` is the location button's
    /// one-time grant (B3), which the app knows as such; a dialog's "Only this time" cannot be told
    /// until it is gone (D6) and leaves it false.
    mutating func syncAndroidMapping() {
        if android.foreground == .none {
            // Whatever took the grant away took the button's with it (B6).
            android.buttonGrant = false
            android.approximateUnderButton = false
            authorization = android.foregroundBlocked || android.foregroundDenials > 0 ? .denied : .notDetermined
        } else {
            // B7: a grant since Settings' "Don't allow" ends what an `askEveryTime` would undo.
            android.neverInSettings = false
            let background = android.background || context.androidAPILevel < 29
            authorization = background ? .authorizedAlways : .authorizedWhenInUse
            accuracy = android.foreground == .precise ? .full : .reduced
        }
        provisional = false
        temporary = android.buttonGrant
        temporaryFullAccuracy = false
        restricted = false
        alwaysPromptUsed = false
        inferredAllowWhileUsing = false
    }

    /// A foreground grant. Below API 29 there is no separate background permission: a
    /// foreground grant includes it. From API 29 background is granted only when chosen (D3, D4).
    mutating func grantForeground(_ grant: ForegroundGrant) {
        android.foreground = grant
        if context.androidAPILevel < 29 { android.background = true }
    }

    /// API 31+ with targetSdk 31+: the accuracy choice, the coarse-with-fine rule, the `precise`
    /// upgrade prompt and D11's precise denials. AOSP's GrantPermissionsViewModel applies them
    /// only to apps targeting S (31) or later.
    var androidAccuracyRules: Bool {
        context.androidAPILevel >= 31 && context.androidTargetSdk >= 31
    }

    // MARK: - Context

    /// C1 on Android. The first Android context must give `apiLevel` and `targetSdk`; D1: below
    /// API 23 (or targetSdk 23) every declared permission is granted at install.
    /// I1: a new `installId` returns the permission state to a new install's (D1's grants
    /// included).
    mutating func applyAndroidContext(_ report: DeviceContext) throws(AuthorizationRejection) -> [Effect] {
        let installing = context.platform != .android
        if installing {
            if report.apiLevel == nil {
                throw AuthorizationRejection(.missingAndroidLevel, "data.apiLevel: the first Android context must give it", field: "data.apiLevel")
            }
            if report.targetSdk == nil {
                throw AuthorizationRejection(.missingAndroidLevel, "data.targetSdk: the first Android context must give it", field: "data.targetSdk")
            }
            context.platform = .android
            // Whatever Apple rules left (a device that reported events before any context).
            let kept = context
            self = DeviceState()
            context = kept
        }
        let reinstall = applyInstallation(of: report)
        if let osVersion = report.osVersion { context.osVersion = osVersion }
        if let appVersion = report.appVersion { context.appVersion = appVersion }
        if let apiLevel = report.apiLevel { context.apiLevel = apiLevel }
        if let targetSdk = report.targetSdk { context.targetSdk = targetSdk }
        if let declared = report.declaredPermissions { context.declaredPermissions = declared }
        if let only = report.fineOnlyForLocationButton { context.fineOnlyForLocationButton = only }
        // SPEC §12: the flag marks ACCESS_FINE_LOCATION's declaration, judged on the context
        // after the event (the rule set applies it to a copy: nothing changes when refused).
        if context.fineOnlyForLocationButton == true && !context.declaredAndroidPermissions.contains(.fine) {
            throw AuthorizationRejection(
                .fineNotDeclared, "data.fineOnlyForLocationButton: true needs fine among the declared permissions",
                field: "data.fineOnlyForLocationButton")
        }
        // D1: granted at install (the first Android context, or a reinstall's), not again at
        // later launches.
        if (installing || !reinstall.isEmpty) && (context.androidAPILevel < 23 || context.androidTargetSdk < 23) {
            let declared = context.declaredAndroidPermissions
            if declared.contains(.fine) {
                android.foreground = .precise
            } else if declared.contains(.coarse) {
                android.foreground = .approximate
            }
            android.background = android.foreground != .none
        }
        return reinstall
    }

    // MARK: - Requests (D1-D5, D11, B8)

    /// `permissionsRequested`: an undeclared permission fails and drops out first; then the first
    /// of D1, D3, D5's block, D11's block, B8, a pending prompt, D4 and D2.
    mutating func applyPermissionsRequest(_ requested: Set<AndroidPermission>) -> [Effect] {
        var effects: [Effect] = []
        let undeclared = requested.subtracting(context.declaredAndroidPermissions)
        if !undeclared.isEmpty {
            effects.append(.failed(.notDeclared, keys: undeclared.sorted().map(\.manifestName)))
        }
        let asked = requested.intersection(context.declaredAndroidPermissions)
        guard !asked.isEmpty else { return effects }
        let api = context.androidAPILevel
        let target = context.androidTargetSdk
        // D1.
        if api < 23 || target < 23 { return effects + [.noEffect(.grantedAtInstall)] }
        let foregroundAsked = !asked.isDisjoint(with: [.coarse, .fine])
        let backgroundAsked = asked.contains(.background)
        // D3: targetSdk 30+ on API 30+ ignores foreground and background asked together.
        if foregroundAsked && backgroundAsked && api >= 30 && target >= 30 {
            return effects + [.noEffect(.backgroundWithForeground)]
        }
        // D5: a blocked group answers at once, with nothing shown.
        if (foregroundAsked && android.foregroundBlocked) || (!foregroundAsked && android.backgroundBlocked) {
            return effects + [.noEffect(.blocked)]
        }
        // D11: so does the upgrade to a blocked precise.
        if asked.contains(.fine) && android.foreground == .approximate && android.preciseBlocked {
            return effects + [.noEffect(.blocked)]
        }
        // B8: with FINE only for the location button, `fine` alone or on top of approximate is
        // refused with no UI and no flag touched (AOSP `NO_UI_REJECT_THIS_GROUP`, logged IGNORED);
        // `fine` with `coarse` and nothing granted shows the approximate-only dialog (below, D2).
        if context.fineOnlyForLocationButtonInForce && asked.contains(.fine)
            && (android.foreground == .approximate || (android.foreground == .none && !asked.contains(.coarse))) {
            return effects + [.noEffect(.onlyForLocationButton)]
        }
        if pendingPrompt != nil { return effects + [.noEffect(.promptPending)] }
        if !foregroundAsked {
            // D4: background alone.
            if android.foreground == .none { return effects + [.noEffect(.foregroundFirst)] }
            if android.background || api < 29 { return effects + [.noEffect(.alreadyDetermined)] }
            return effects + showAndroid(api == 29 ? .backgroundDialog : .backgroundSettings, for: asked)
        }
        // D2: API 31+ with targetSdk 31+ ignores fine without coarse, the upgrade included.
        if androidAccuracyRules && asked.intersection([.coarse, .fine]) == [.fine] {
            return effects + [.noEffect(.fineNeedsCoarse)]
        }
        switch android.foreground {
        case .none:
            // D4: targetSdk 28 or lower on API 29: Android adds background to every foreground
            // request, and the dialog offers "Allow all the time" (D3's API 29 case).
            let shown = api == 29 && target <= 28 ? asked.union([.background]) : asked
            return effects + showAndroid(.foreground, for: shown)
        case .approximate where asked.contains(.fine):
            // The upgrade dialog from targetSdk 31 on Android 12+; before, the ordinary dialog
            // asks for fine.
            return effects + showAndroid(androidAccuracyRules ? .precise : .foreground, for: asked)
        case .approximate, .precise:
            // Foreground already granted; on API 29 (or targetSdk < 30) background asked with it
            // shows the background prompt.
            if backgroundAsked && !android.background && api >= 29 {
                return effects + showAndroid(api == 29 ? .backgroundDialog : .backgroundSettings, for: asked)
            }
            return effects + [.noEffect(.alreadyDetermined)]
        }
    }

    private mutating func showAndroid(_ prompt: Prompt, for requested: Set<AndroidPermission>) -> [Effect] {
        pendingPrompt = prompt
        android.pendingRequest = requested
        return [.promptShown(prompt)]
    }

    /// The permissions the state holds, as `checkSelfPermission` would report them.
    var currentPermissions: Set<AndroidPermission> {
        var granted: Set<AndroidPermission> = []
        switch android.foreground {
        case .precise: granted = [.coarse, .fine]
        case .approximate: granted = [.coarse]
        case .none: break
        }
        if android.background && android.foreground != .none { granted.insert(.background) }
        return granted
    }

    /// D9 (and D6): the device's permissions are the truth. A foreground grant the state did not
    /// have clears a pending prompt. The first observation after the app left the foreground
    /// that finds the grant gone corrects the last While-using answer to its `Once` form.
    mutating func reconcilePermissions(granted: Set<AndroidPermission>, locationEnabled: Bool?) -> [Effect] {
        let before = self
        let beforeStatus = status
        let beforeAccuracy = effectiveAccuracy
        let foreground: ForegroundGrant = granted.contains(.fine) ? .precise : (granted.contains(.coarse) ? .approximate : .none)
        var correction: Effect?
        if android.leftForegroundSinceAnswer, let answer = android.correctableAnswer {
            // "Only this time" exists from API 30.
            if foreground == .none && android.foreground != .none && context.androidAPILevel >= 30, let once = answer.oneTimeForm {
                // D6: a lapse, not a denial: denials and blocks stay as they are.
                correction = .answerCorrected(prompt: .foreground, from: answer, to: once)
            }
            android.correctableAnswer = nil
            android.leftForegroundSinceAnswer = false
        }
        let gained = android.foreground == .none && foreground != .none
        settleButtonGrant(observed: foreground)
        android.foreground = foreground
        android.background = context.androidAPILevel >= 29 ? granted.contains(.background) && foreground != .none : foreground != .none
        // A group the device grants is not blocked any more (the person granted it in Settings).
        if foreground != .none { android.foregroundBlocked = false }
        if android.background { android.backgroundBlocked = false }
        if foreground == .precise { android.preciseBlocked = false }
        if let locationEnabled { locationServicesEnabled = locationEnabled }
        if gained {
            pendingPrompt = nil
            android.pendingRequest = []
        }
        syncAndroidMapping()
        var effects: [Effect]
        // Settling D6's bookkeeping is no change the device reported.
        var compared = self
        compared.android.correctableAnswer = before.android.correctableAnswer
        compared.android.leftForegroundSinceAnswer = before.android.leftForegroundSinceAnswer
        if compared == before {
            effects = [.noEffect(.confirmed)]
        } else {
            effects = [.reconciled(from: beforeStatus, to: status)]
            if beforeAccuracy != effectiveAccuracy { effects.append(.accuracyChanged(from: beforeAccuracy, to: effectiveAccuracy)) }
        }
        if let correction { effects.append(correction) }
        return effects
    }
}
