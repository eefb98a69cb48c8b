/// Android's rules D1-D10 (SPEC §12). Sources: developer.android.com's location and runtime
/// permission pages, the Android 10/11/12/14 behaviour changes, app hibernation, and AOSP, summed
/// up with their addresses in `docs/rules.md`.
extension DeviceState {
    // MARK: - Mapping

    /// The shared fields from Android's: foreground none is denied once denied or blocked, else
    /// notDetermined; a foreground grant with background (or below API 29, where there is no
    /// separate background permission) is authorizedAlways, without it authorizedWhenInUse.
    /// Precise is full accuracy, approximate reduced. `temporary` stays false: an app cannot tell
    /// a one-time grant until it is gone (D6).
    mutating func syncAndroidMapping() {
        if android.foreground == .none {
            authorization = android.foregroundBlocked || android.foregroundDenials > 0 ? .denied : .notDetermined
        } else {
            let background = android.background || context.androidAPILevel < 29
            authorization = background ? .authorizedAlways : .authorizedWhenInUse
            accuracy = android.foreground == .precise ? .full : .reduced
        }
        provisional = false
        temporary = false
        temporaryFullAccuracy = false
        restricted = false
        alwaysPromptUsed = false
        inferredAllowWhileUsing = false
    }

    /// A foreground grant. Below API 29 there is no separate background permission, and apps
    /// targeting API 28 or lower on API 29+ get background with it (D4).
    private mutating func grantForeground(_ grant: ForegroundGrant) {
        android.foreground = grant
        if context.androidAPILevel < 29 || context.androidTargetSdk <= 28 { android.background = true }
    }

    // MARK: - Context

    /// C1 on Android. The first Android context must give `apiLevel` and `targetSdk`; D1: below
    /// API 23 (or targetSdk 23) every declared permission is granted at install.
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
        if let osVersion = report.osVersion { context.osVersion = osVersion }
        if let appVersion = report.appVersion { context.appVersion = appVersion }
        if let apiLevel = report.apiLevel { context.apiLevel = apiLevel }
        if let targetSdk = report.targetSdk { context.targetSdk = targetSdk }
        if let declared = report.declaredPermissions { context.declaredPermissions = declared }
        // D1: granted at install (the first Android context), not again at later launches.
        if installing && (context.androidAPILevel < 23 || context.androidTargetSdk < 23) {
            let declared = context.declaredAndroidPermissions
            if declared.contains(.fine) {
                android.foreground = .precise
            } else if declared.contains(.coarse) {
                android.foreground = .approximate
            }
            android.background = android.foreground != .none
        }
        return []
    }

    // MARK: - Requests (D1-D5)

    /// `permissionsRequested`: an undeclared permission fails and drops out first; then the first
    /// of D1, D3, D5's block, a pending prompt, D4 and D2.
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
        if pendingPrompt != nil { return effects + [.noEffect(.promptPending)] }
        if !foregroundAsked {
            // D4: background alone.
            if android.foreground == .none { return effects + [.noEffect(.foregroundFirst)] }
            if android.background || api < 29 { return effects + [.noEffect(.alreadyDetermined)] }
            return effects + showAndroid(api == 29 ? .backgroundDialog : .backgroundSettings, for: asked)
        }
        // D2: API 31+ ignores fine without coarse.
        if api >= 31 && asked.intersection([.coarse, .fine]) == [.fine] {
            return effects + [.noEffect(.fineNeedsCoarse)]
        }
        switch android.foreground {
        case .none:
            return effects + showAndroid(.foreground, for: asked)
        case .approximate where asked.contains(.fine):
            // Android 12+ shows the upgrade; before, the ordinary dialog asks for fine.
            return effects + showAndroid(api >= 31 ? .precise : .foreground, for: asked)
        case .approximate, .precise:
            // Foreground already granted; on API 29 (or targetSdk < 30) background asked with it
            // shows the background dialog.
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

    // MARK: - Results (D5, D6, D9)

    /// `permissionsResult`. With a prompt pending it is the answer, inferred as O2 does (the
    /// While-using form where a one-time grant looks the same); with none, Android answered at
    /// once and the result reconciles the permissions it names (D9).
    mutating func applyPermissionsResult(_ result: PermissionsResult) -> [Effect] {
        guard let prompt = pendingPrompt, prompt.isAndroid else {
            if result.interrupted { return [.noEffect(.unchanged)] }
            var granted = currentPermissions
            granted.subtract(result.denied)
            granted.formUnion(result.granted)
            return reconcilePermissions(granted: granted, locationEnabled: nil)
        }
        let requested = android.pendingRequest
        pendingPrompt = nil
        android.pendingRequest = []
        // Dismissed: the prompt ends, nothing else changes.
        if result.interrupted { return [.noEffect(.unchanged)] }
        let beforeStatus = status
        let beforeAccuracy = effectiveAccuracy
        let api = context.androidAPILevel
        let choice: PromptChoice
        switch prompt {
        case .foreground:
            let fine = result.granted.contains(.fine)
            if fine || result.granted.contains(.coarse) {
                grantForeground(fine ? .precise : .approximate)
                if result.granted.contains(.background) {
                    android.background = true
                    choice = .allowAllTheTime
                } else if requested.contains(.background) {
                    // API 29 (or targetSdk < 30): background asked with foreground and not granted.
                    countDenial(foreground: false, result: result, requested: requested)
                    choice = .whileUsing
                } else if api >= 31 && requested.contains(.coarse) && requested.contains(.fine) {
                    choice = fine ? .preciseWhileUsing : .approximateWhileUsing
                } else {
                    choice = .whileUsing
                }
                android.correctableAnswer = choice.oneTimeForm == nil ? nil : choice
                android.leftForegroundSinceAnswer = !inForeground
            } else {
                choice = .deny
                countDenial(foreground: true, result: result, requested: requested)
            }
        case .backgroundDialog, .backgroundSettings:
            if result.granted.contains(.background) {
                android.background = true
                choice = .allowAllTheTime
            } else if !result.denied.isDisjoint(with: [.coarse, .fine]) {
                // Deny revokes the foreground grant too.
                android.foreground = .none
                android.background = false
                choice = .deny
                countDenial(foreground: false, result: result, requested: requested)
            } else {
                choice = prompt == .backgroundDialog ? .keepWhileUsing : .allowWhileUsing
                countDenial(foreground: false, result: result, requested: requested)
            }
        default:
            // `precise`: approximate kept is a grant, not a denial.
            if result.granted.contains(.fine) {
                android.foreground = .precise
                choice = .precise
            } else {
                choice = .keepApproximate
            }
        }
        syncAndroidMapping()
        var effects: [Effect] = [.answerInferred(prompt: prompt, choice: choice), .reconciled(from: beforeStatus, to: status)]
        if beforeAccuracy != effectiveAccuracy { effects.append(.accuracyChanged(from: beforeAccuracy, to: effectiveAccuracy)) }
        return effects
    }

    /// D5: a denial counts for its group. API 30+: the second blocks it. Below 30: a result whose
    /// `rationale` list leaves out the group's permission blocks it ("don't ask again").
    private mutating func countDenial(foreground: Bool, result: PermissionsResult, requested: Set<AndroidPermission>) {
        let group: Set<AndroidPermission> = foreground ? requested.intersection([.coarse, .fine]) : [.background]
        var denials = foreground ? android.foregroundDenials : android.backgroundDenials
        denials = min(denials + 1, AndroidPermissionState.maxCountedDenials)
        let blocks: Bool
        if context.androidAPILevel >= 30 {
            blocks = denials >= 2
        } else if let rationale = result.rationale {
            blocks = rationale.isDisjoint(with: group)
        } else {
            blocks = false
        }
        if foreground {
            android.foregroundDenials = denials
            android.foregroundBlocked = android.foregroundBlocked || blocks
        } else {
            android.backgroundDenials = denials
            android.backgroundBlocked = android.backgroundBlocked || blocks
        }
    }

    /// The permissions the state holds, as `checkSelfPermission` would report them.
    private var currentPermissions: Set<AndroidPermission> {
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
        android.foreground = foreground
        android.background = context.androidAPILevel >= 29 ? granted.contains(.background) && foreground != .none : foreground != .none
        // A group the device grants is not blocked any more (the person granted it in Settings).
        if foreground != .none { android.foregroundBlocked = false }
        if android.background { android.backgroundBlocked = false }
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

    // MARK: - D7, D8, D10

    /// D7: the app's location page in Settings.
    mutating func applyAndroidSettings(authorization setting: SettingsAuthorization?, preciseLocation: Bool?) throws(AuthorizationRejection) {
        if setting == .askNextTime {
            throw AuthorizationRejection(
                .notOnThisPlatform, "data.authorization: askNextTime is Apple's; Android's Settings offer always, whileUsing, askEveryTime, never",
                field: "data.authorization")
        }
        android.correctableAnswer = nil
        android.leftForegroundSinceAnswer = false
        let preciseDeclared = context.declaredAndroidPermissions.contains(.fine)
        switch setting {
        case .always, .whileUsing:
            if android.foreground == .none { grantForeground(preciseDeclared ? .precise : .approximate) }
            // "Allow only while using the app" takes background away, a legacy app's too.
            android.background = setting == .always
            android.foregroundBlocked = false
            if setting == .always { android.backgroundBlocked = false }
        case .askEveryTime:
            // AOSP revokes with the one-time flag and clears USER_SET: ask again.
            android = AndroidPermissionState()
        case .never:
            android.foreground = .none
            android.background = false
            android.foregroundBlocked = true
            android.backgroundBlocked = true
        case .askNextTime, nil:
            break
        }
        if setting != nil {
            pendingPrompt = nil
            android.pendingRequest = []
        }
        if let preciseLocation, android.foreground != .none {
            android.foreground = preciseLocation ? .precise : .approximate
        }
    }

    /// D8: after months unused every grant returns to none, and the app may ask again.
    mutating func applyPermissionsReset() {
        android = AndroidPermissionState()
        pendingPrompt = nil
    }

    /// The app's use state; D10: a location foreground service needs a foreground grant on API
    /// 34+, and with targetSdk 34+ the `foregroundServiceLocation` declaration; a refused start
    /// leaves the app out of use. D6's clock starts when the app leaves the foreground without
    /// such a service, or terminates.
    mutating func applyAndroidAppState(_ state: AppState, foregroundService: Bool) -> [Effect] {
        var effects: [Effect] = []
        var serviceRuns = foregroundService
        if foregroundService && context.androidAPILevel >= 34 {
            let undeclared = context.androidTargetSdk >= 34 && !context.declaredAndroidPermissions.contains(.foregroundServiceLocation)
            if undeclared || android.foreground == .none {
                effects.append(.failed(.foregroundServiceNotAllowed, keys: undeclared ? [AndroidPermission.foregroundServiceLocation.manifestName] : []))
                serviceRuns = false
            }
        }
        inForeground = state == .foreground
        inUse = state == .foreground || (state == .background && serviceRuns)
        if android.correctableAnswer != nil && (state == .terminated || (state == .background && !serviceRuns)) {
            android.leftForegroundSinceAnswer = true
        }
        return effects
    }
}
