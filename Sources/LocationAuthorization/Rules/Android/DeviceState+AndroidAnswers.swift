/// Android's answers (SPEC §12: D5, D6, D9, D11): a `permissionsResult` read as the answer to the
/// prompt on screen. An Android app never sees which button was pressed, so every answer is
/// inferred from the result's sets and, where it is given, the `rationale` list
/// (`shouldShowRequestPermissionRationale` right after the callback).
extension DeviceState {
    /// `permissionsResult`. With a prompt pending it is the answer, inferred as O2 does (the
    /// While-using form where a one-time grant looks the same); with none, Android answered at
    /// once and the result reconciles the permissions it names (D9).
    mutating func applyPermissionsResult(_ result: PermissionsResult) -> [Effect] {
        guard let prompt = pendingPrompt, prompt.isAndroid else {
            if result.interrupted { return [.noEffect(.unchanged)] }
            return reconcileResult(result)
        }
        // B8: the dialog FINE-only-for-the-button apps get offers approximate choices only; a
        // result that grants `fine` to it is the device's truth, reconciled as D9, no answer
        // inferred (no choice of that dialog explains it).
        if prompt == .foreground && !result.interrupted && result.granted.contains(.fine) && context.fineOnlyForLocationButtonInForce {
            pendingPrompt = nil
            android.pendingRequest = []
            return reconcileResult(result)
        }
        let requested = android.pendingRequest
        pendingPrompt = nil
        android.pendingRequest = []
        // Interrupted: the prompt ends, nothing else changes.
        if result.interrupted { return [.noEffect(.unchanged)] }
        let beforeStatus = status
        let beforeAccuracy = effectiveAccuracy
        let choice: PromptChoice
        switch prompt {
        case .foreground:
            choice = answerForeground(result, requested: requested)
        case .backgroundDialog, .backgroundSettings:
            choice = answerBackground(prompt, result)
        default:
            choice = answerPrecise(result)
        }
        // D5, D11: a dismissal ends the prompt with this one effect and changes nothing else.
        if choice == .dismissed { return [.answerInferred(prompt: prompt, choice: .dismissed)] }
        syncAndroidMapping()
        var effects: [Effect] = [.answerInferred(prompt: prompt, choice: choice), .reconciled(from: beforeStatus, to: status)]
        if beforeAccuracy != effectiveAccuracy { effects.append(.accuracyChanged(from: beforeAccuracy, to: effectiveAccuracy)) }
        return effects
    }

    /// D9: a result read as an observation of the permissions it names; the others stay as the
    /// state holds them.
    private mutating func reconcileResult(_ result: PermissionsResult) -> [Effect] {
        var granted = currentPermissions
        granted.subtract(result.denied)
        granted.formUnion(result.granted)
        return reconcilePermissions(granted: granted, locationEnabled: nil)
    }

    /// The `foreground` dialog (D2, D3): a grant of `coarse` or `fine` is a While-using answer
    /// (the accuracy forms from targetSdk 31 for a request holding both), or `allowAllTheTime`
    /// where the dialog offered it (API 29) and background was granted; nothing granted is a
    /// denial or a dismissal (D5).
    private mutating func answerForeground(_ result: PermissionsResult, requested: Set<AndroidPermission>) -> PromptChoice {
        let fine = result.granted.contains(.fine)
        guard fine || result.granted.contains(.coarse) else {
            if isDismissal(of: requested.intersection([.coarse, .fine]), denials: android.foregroundDenials, result) { return .dismissed }
            countDenial(ofBackground: false, result, requested: requested.intersection([.coarse, .fine]))
            return .deny
        }
        grantForeground(fine ? .precise : .approximate)
        let choice: PromptChoice
        if requested.contains(.background) && context.androidAPILevel == 29 {
            // D3's API 29 case (and D4's legacy app): "Allow all the time" was a button.
            if result.granted.contains(.background) {
                android.background = true
                choice = .allowAllTheTime
            } else {
                // Declined where the app asked for background itself; a legacy app's added
                // background is not in its result, and its answer is unknown until observed.
                if result.denied.contains(.background) { countDenial(ofBackground: true, result, requested: [.background]) }
                choice = .whileUsing
            }
        } else if androidAccuracyRules && requested.isSuperset(of: [.coarse, .fine]) {
            choice = fine ? .preciseWhileUsing : .approximateWhileUsing
        } else {
            // targetSdk < 30 on API 30+: background asked with foreground is not offered, and the
            // result's background part is no denial (D3).
            choice = .whileUsing
        }
        android.correctableAnswer = choice.oneTimeForm == nil ? nil : choice
        android.leftForegroundSinceAnswer = !inForeground
        return choice
    }

    /// The background prompts (D4). `backgroundDialog` (API 29) is a dialog that can be
    /// dismissed (D5). `backgroundSettings` (API 30+) is the app's Settings page: leaving it with
    /// background not granted is a denial for targetSdk 30+ (AOSP counts it), and for a lower
    /// targetSdk, whose request showed a dialog linking to the page, no denial.
    private mutating func answerBackground(_ prompt: Prompt, _ result: PermissionsResult) -> PromptChoice {
        if result.granted.contains(.background) {
            android.background = true
            return .allowAllTheTime
        }
        let counts = prompt == .backgroundDialog || context.androidTargetSdk >= 30
        if !result.denied.isDisjoint(with: [.coarse, .fine]) {
            // Deny revokes the foreground grant too.
            android.foreground = .none
            android.background = false
            if counts { countDenial(ofBackground: true, result, requested: [.background]) }
            return .deny
        }
        if prompt == .backgroundDialog {
            if isDismissal(of: [.background], denials: android.backgroundDenials, result) { return .dismissed }
            countDenial(ofBackground: true, result, requested: [.background])
            return .keepWhileUsing
        }
        if counts { countDenial(ofBackground: true, result, requested: [.background]) }
        return .allowWhileUsing
    }

    /// The `precise` upgrade (D11): `fine` granted is `precise`; otherwise `coarse` stays granted
    /// and the answer is `keepApproximate`, a precise denial, or a dismissal, read from `fine` in
    /// `rationale` as D5 reads a group.
    private mutating func answerPrecise(_ result: PermissionsResult) -> PromptChoice {
        if result.granted.contains(.fine) {
            android.foreground = .precise
            return .precise
        }
        if isDismissal(of: [.fine], denials: android.preciseDenials, result) { return .dismissed }
        countPreciseDenial()
        return .keepApproximate
    }

    /// D5: a result that grants nothing of what a dialog asked for is a denial or a dismissal.
    /// Android records nothing for a dismissal (GrantPermissionsViewModel logs it as CANCELED),
    /// and only a denial changes `shouldShowRequestPermissionRationale`: with no denial yet a
    /// denial puts the permissions in `rationale` and a dismissal leaves them out; on API 30+,
    /// after one denial, a denial (the second dialog's "Don't allow" means don't ask again)
    /// takes them out and a dismissal leaves them in. Below API 30 after a denial the two look
    /// alike and it is read as a denial. Without a `rationale` list, a denial.
    private func isDismissal(of asked: Set<AndroidPermission>, denials: Int, _ result: PermissionsResult) -> Bool {
        guard let rationale = result.rationale, !asked.isEmpty else { return false }
        let shown = !rationale.isDisjoint(with: asked)
        if denials == 0 { return !shown }
        return context.androidAPILevel >= 30 && shown
    }

    /// D5: a denial counts for its group. API 30+: the second blocks it. Below 30: after an
    /// earlier denial, a result whose `rationale` list leaves out the group's permissions blocks
    /// it ("don't ask again" was ticked).
    private mutating func countDenial(ofBackground background: Bool, _ result: PermissionsResult, requested group: Set<AndroidPermission>) {
        let earlier = background ? android.backgroundDenials : android.foregroundDenials
        let denials = min(earlier + 1, AndroidPermissionState.maxCountedDenials)
        let blocks: Bool
        if context.androidAPILevel >= 30 {
            blocks = denials >= 2
        } else if let rationale = result.rationale, earlier > 0 {
            blocks = rationale.isDisjoint(with: group)
        } else {
            blocks = false
        }
        if background {
            android.backgroundDenials = denials
            android.backgroundBlocked = android.backgroundBlocked || blocks
        } else {
            android.foregroundDenials = denials
            android.foregroundBlocked = android.foregroundBlocked || blocks
        }
    }

    /// D11: a precise denial; the second blocks precise. Precise has denials of its own only on
    /// API 31+ with targetSdk 31+.
    mutating func countPreciseDenial() {
        guard androidAccuracyRules else { return }
        android.preciseDenials = min(android.preciseDenials + 1, AndroidPermissionState.maxCountedDenials)
        if android.preciseDenials >= 2 { android.preciseBlocked = true }
    }
}
