/// Android 17's location button (SPEC §12, "The location button", rules B1-B7; B8 is a request
/// rule in `DeviceState+AndroidRules.swift`). Sources: AOSP PermissionController (Android 17
/// branch) `ui/model/v37/LocationButtonViewModel.kt` (the states ALREADY_GRANTED,
/// NOT_GRANTABLE, CONSENTED, SHOW_UI; `onAllow`, `onDontAllow`), `utils/KotlinUtils.kt` (the
/// trusted-UI flags SHOWN, then CONSENTED), and the `LocationButtonClient` reference; their
/// addresses are in `docs/rules.md`.
///
/// What the app learns is only `onPermissionResult(isGranted)`: whether a consent dialog was
/// on screen is inferred from the state, as O2 infers an answer from a status.
extension DeviceState {
    /// B1: `locationButtonSession` changes no permission. `opened` opens the session, `closed`
    /// and `failed` end it (Android closes a session before `onSessionError`); closing ends no
    /// grant (`LocationButtonSession.close()` releases only the surface).
    mutating func applyLocationButtonSession(_ state: LocationButtonSessionState, cause: String?) -> [Effect] {
        let open = state == .opened
        var effects: [Effect] = android.locationButtonSession == open
            ? [.noEffect(.unchanged)]
            : [.sessionChanged(session: LocationButton.sessionKey, active: open)]
        android.locationButtonSession = open
        if state == .failed {
            effects.append(.failed(.locationButtonError, keys: cause.map { [$0] } ?? []))
        }
        return effects
    }

    /// `locationButtonResult`: B2 (already precise), B3 (a grant), B4 (a refusal). A prompt of
    /// another kind that is pending stays pending: the button's dialog is PermissionController's
    /// own activity, not the runtime dialog. B5: a dismissed dialog or a dropped tap sends no
    /// result, so nothing here ever runs for them.
    mutating func applyLocationButtonResult(granted: Bool) -> [Effect] {
        granted ? grantThroughButton() : refuseThroughButton()
    }

    /// Whether the app holds approximate location persistently: a foreground grant that is not
    /// the button's one-time grant, or the approximate that was held before it (AOSP
    /// `!coarse.isGranted || coarse.isOneTime` decides whether consent is saved). A dialog's
    /// "Only this time" cannot be told apart (D6) and counts as persistent.
    var holdsApproximatePersistently: Bool {
        android.foreground != .none && (!android.buttonGrant || android.approximateUnderButton)
    }

    /// Whether a tap would show the consent dialog now: never while precise is held (AOSP answers
    /// ALREADY_GRANTED first, B2); every time while approximate is held persistently (AOSP saves
    /// no consent then, "because in settings we don't show '... or allow when you share'");
    /// otherwise until `consentsForDirectGrant` dialogs were answered Allow (CONSENTED).
    var locationButtonDialogDue: Bool {
        guard android.foreground != .precise else { return false }
        return holdsApproximatePersistently || android.buttonConsents < AndroidPermissionState.consentsForDirectGrant
    }

    /// B2, B3: `granted: true`. While precise is held: noEffect `alreadyGranted`. Otherwise,
    /// whatever the state says of blocks (the device is the truth): precise, and approximate
    /// where it was not granted, become one-time grants (`onAllow` grants COARSE, if not
    /// granted, then FINE, both `isOneTime`); background is unchanged; the grant sets USER_SET and
    /// clears USER_FIXED, so the foreground group's and precise's denials and blocks clear. Where
    /// the dialog showed, the effects infer it answered `allow` and the consent steps up, unless
    /// approximate is held persistently. The rule set adds `statusChanged` / `accuracyChanged`.
    private mutating func grantThroughButton() -> [Effect] {
        if android.foreground == .precise { return [.noEffect(.alreadyGranted)] }
        let persistentApproximate = holdsApproximatePersistently
        var effects: [Effect] = []
        if locationButtonDialogDue {
            effects = [.promptShown(.locationButton), .answerInferred(prompt: .locationButton, choice: .allow)]
            if !persistentApproximate {
                android.buttonConsents = min(android.buttonConsents + 1, AndroidPermissionState.consentsForDirectGrant)
            }
        }
        // A grant on top of a live button grant (precise switched off in Settings, B6) keeps
        // what was held before the first.
        if !android.buttonGrant { android.approximateUnderButton = persistentApproximate }
        android.foreground = .precise
        android.buttonGrant = true
        android.foregroundDenials = 0
        android.foregroundBlocked = false
        android.preciseDenials = 0
        android.preciseBlocked = false
        return effects
    }

    /// B4: `granted: false`. Below targetSdk 31 precise has no denials of its own (D11): noEffect
    /// `unchanged`. While the foreground group or precise is blocked the button shows nothing
    /// (AOSP NOT_GRANTABLE: `foreground.isUserFixed`): noEffect `blocked`. Where the dialog was
    /// due, it was answered "Don't allow" (`onDontAllow` revokes FINE alone, `userFixed` when it
    /// was USER_SET: one precise denial as D11 counts them, the second blocks) and the consent
    /// flags clear (`revokeRuntimePermission`); approximate is untouched. Otherwise a direct grant
    /// was due and device policy refused it: noEffect `notGrantable`.
    private mutating func refuseThroughButton() -> [Effect] {
        guard context.androidTargetSdk >= 31 else { return [.noEffect(.unchanged)] }
        if android.foregroundBlocked || android.preciseBlocked { return [.noEffect(.blocked)] }
        guard locationButtonDialogDue else { return [.noEffect(.notGrantable)] }
        countPreciseDenial()
        android.buttonConsents = 0
        return [.promptShown(.locationButton), .answerInferred(prompt: .locationButton, choice: .dontAllow)]
    }

    /// B6: after an observation, whether the button's one-time grant still holds. It holds while
    /// precise does, or approximate where approximate itself was one-time (precise switched off in
    /// Settings); it ended (a lapse, or a revocation the app did not report) when the device
    /// shows nothing, or only the approximate held before it. A lapse counts no denial and
    /// corrects no answer: the button's answer was known to be one-time.
    mutating func settleButtonGrant(observed foreground: ForegroundGrant) {
        guard android.buttonGrant else { return }
        let holds = foreground == .precise || (foreground == .approximate && !android.approximateUnderButton)
        if !holds {
            android.buttonGrant = false
            android.approximateUnderButton = false
        }
    }

    /// The state as it would be without the button's one-time grant: the approximate held before
    /// it, or nothing (and then no background: AOSP revokes background with the last foreground
    /// permission). The gate compares the two (SPEC §12: `temporary`, `temporaryAuthorization`).
    var withoutButtonGrant: DeviceState {
        guard android.buttonGrant else { return self }
        var state = self
        state.android.foreground = android.approximateUnderButton ? .approximate : .none
        if state.android.foreground == .none { state.android.background = false }
        state.android.buttonGrant = false
        state.android.approximateUnderButton = false
        state.syncAndroidMapping()
        return state
    }
}
