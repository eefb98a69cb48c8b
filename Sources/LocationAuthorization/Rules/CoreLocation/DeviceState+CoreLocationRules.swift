extension DeviceState {
    // MARK: - C1

    /// C1: fields left out keep their value; the first report of `defaultAccuracyReduced` sets the
    /// starting accuracy (NSLocationDefaultAccuracyReduced).
    mutating func applyContext(_ report: DeviceContext) throws(AuthorizationRejection) -> [Effect] {
        // Android's fields on an Apple device's context (one that names no platform).
        for (field, present) in [("apiLevel", report.apiLevel != nil), ("targetSdk", report.targetSdk != nil),
                                 ("declaredPermissions", report.declaredPermissions != nil),
                                 ("fineOnlyForLocationButton", report.fineOnlyForLocationButton != nil)] where present {
            throw AuthorizationRejection(.notOnThisPlatform, "data.\(field): only an Android context has it", field: "data.\(field)")
        }
        // I1: a new installation starts from a new install's permission state.
        let reinstall = applyInstallation(of: report)
        if let reduced = report.defaultAccuracyReduced, context.defaultAccuracyReduced == nil, reduced {
            accuracy = .reduced
        }
        if let platform = report.platform { context.platform = platform }
        if let osVersion = report.osVersion { context.osVersion = osVersion }
        if let appVersion = report.appVersion { context.appVersion = appVersion }
        if let keys = report.usageDescriptions { context.usageDescriptions = keys }
        if let keys = report.temporaryUsagePurposeKeys { context.temporaryUsagePurposeKeys = keys }
        if let reduced = report.defaultAccuracyReduced { context.defaultAccuracyReduced = reduced }
        if let explicit = report.requireExplicitServiceSession { context.requireExplicitServiceSession = explicit }
        if let mode = report.backgroundLocationMode { context.backgroundLocationMode = mode }
        // V2: a new build may bring the missing key; report it again if not.
        sessionState.promptFailureReported = false
        let wasInUse = isInUse
        // A context without the APIs (an unusual report, such as another OS version) holds
        // none; otherwise V1: a launch may come without `terminated`.
        let effects = !context.hasServiceSessions || !context.hasBackgroundActivitySessions
            ? dropUnsupportedSessions() : suspendSessionsForRelaunch()
        // A background activity that kept the app in use is no longer held (S1).
        if wasInUse && !isInUse { leaveUse() }
        return reinstall + effects
    }

    // MARK: - A rules

    /// The request rules. Where several match, the first of A9, A8, A7, a pending prompt, A5, A6
    /// applies, then the others (SPEC §3).
    mutating func applyRequest(_ request: AuthorizationRequest) throws(AuthorizationRejection) -> [Effect] {
        var kind = request.kind
        let platform = context.effectivePlatform
        // A9: tvOS has no Always; visionOS treats Always as When In Use (000).
        if kind == .always && platform == .tvOS {
            throw AuthorizationRejection(
                .unsupportedRequest,
                "authorizationRequested: request always is not supported on tvOS, which only offers When In Use")
        }
        if kind == .always && platform == .visionOS {
            kind = .whenInUse
        }
        // A8 with K1-K3: a missing key fails at once, with no prompt and no delegate call (004).
        switch kind {
        case .whenInUse:
            let missing = UsageDescriptionKey.missingForWhenInUse(in: context)
            if !missing.isEmpty { return [.failed(.missingUsageDescription, keys: missing)] }
        case .always:
            let missing = UsageDescriptionKey.missingForAlways(in: context)
            if !missing.isEmpty { return [.failed(.missingUsageDescription, keys: missing)] }
        case .temporaryFullAccuracy:
            let purposeKey = request.purposeKey ?? ""
            if !context.declaresPurposeKey(purposeKey) { return [.failed(.missingPurposeKey, keys: [purposeKey])] }
        }
        // A7: once denied or restricted, Core Location allows no further requests (001).
        switch status {
        case .restricted: return [.noEffect(.restricted)]
        case .denied: return [.noEffect(.denied)]
        default: break
        }
        if pendingPrompt != nil { return [.noEffect(.promptPending)] }
        switch kind {
        case .whenInUse:
            // A1 / A2.
            if status == .notDetermined { return show(.whenInUse) }
            return [.noEffect(.alreadyDetermined)]
        case .always:
            return requestAlways()
        case .temporaryFullAccuracy:
            return requestTemporaryFullAccuracy()
        }
    }

    /// A5, A6, then A3 / A10 from notDetermined and A4 / A11 from When In Use.
    ///
    /// *(decision)* iOS/iPadOS below 13 other than 13.0-13.3 escalate from When In Use with the
    /// `alwaysUpgrade` prompt at once, as A4 does: iOS 11 and 12 showed "Only While Using" /
    /// "Always Allow" for the escalation (003 "In iOS 11 and later ... escalate"), and the product
    /// reads iOS 8-10's one-time escalation the same way rather than inventing a seventh prompt.
    private mutating func requestAlways() -> [Effect] {
        // A5: Allow Once blocks the escalation (000).
        if authorization == .authorizedWhenInUse && temporary {
            return [.noEffect(.temporaryAuthorization)]
        }
        // A6: one Always request per app (000 "further calls have no effect", 002).
        if authorization == .authorizedAlways { return [.noEffect(.alreadyAlways)] }
        if alwaysPromptUsed { return [.noEffect(.alwaysAlreadyRequested)] }
        switch authorization {
        case .notDetermined:
            alwaysPromptUsed = true
            // A10: iOS 11-12 show the three-option prompt, below 11 a two-option one.
            if context.isIOSFamily(below: OSVersion(13)) { return show(.legacyAlways) }
            // A3: the first of two prompts, with the When In Use string.
            return show(.alwaysFirst)
        case .authorizedWhenInUse:
            alwaysPromptUsed = true
            // A11: 13.0-13.3 granted Provisional Always silently; the status change is the effect.
            if context.isSilentEscalationRelease {
                authorization = .authorizedAlways
                provisional = true
                return []
            }
            // A4: the escalation prompt appears at once (000, 003).
            return show(.alwaysUpgrade)
        case .denied:
            return [.noEffect(.denied)]
        case .authorizedAlways:
            return [.noEffect(.alreadyAlways)]
        }
    }

    /// A12, after K3, A7 and a pending prompt.
    private mutating func requestTemporaryFullAccuracy() -> [Effect] {
        if status == .notDetermined { return [.noEffect(.notAuthorized)] }
        if effectiveAccuracy == .full { return [.noEffect(.alreadyFullAccuracy)] }
        if !isInUse { return [.noEffect(.notInUse)] }
        return show(.fullAccuracy)
    }

    private mutating func show(_ prompt: Prompt) -> [Effect] {
        pendingPrompt = prompt
        return [.promptShown(prompt)]
    }

    // MARK: - P rules

    /// The answer rules P1-P6. A choice the pending prompt does not offer, or an answer with no
    /// prompt pending, is rejected and the state is left as it was.
    mutating func applyResponse(_ choice: PromptChoice) throws(AuthorizationRejection) -> [Effect] {
        guard let prompt = pendingPrompt else {
            throw AuthorizationRejection(
                .noPromptPending,
                "promptResponded: no prompt is pending, so choice \(choice.rawValue) answers nothing")
        }
        let offered = prompt.offeredChoices(in: context)
        guard offered.contains(choice) else {
            throw AuthorizationRejection(
                .choiceNotOffered,
                "promptResponded: choice \(choice.rawValue) is not offered by the \(prompt.rawValue) prompt"
                    + " (it offers \(offered.map(\.rawValue).joined(separator: ", ")))")
        }
        pendingPrompt = nil
        inferredAllowWhileUsing = false
        switch (prompt, choice) {
        case (.whenInUse, .allowWhileUsing), (.legacyAlways, .allowWhileUsing):
            // P1, P5.
            grantWhenInUse()
        case (.whenInUse, .allowOnce), (.alwaysFirst, .allowOnce):
            // P1, P2: Temporary When In Use.
            authorization = .authorizedWhenInUse
            temporary = true
            provisional = false
        case (.whenInUse, .dontAllow), (.alwaysFirst, .dontAllow), (.legacyAlways, .dontAllow):
            // P1, P2, P5.
            authorization = .denied
            temporary = false
            provisional = false
        case (.alwaysFirst, .allowWhileUsing):
            // P2: Provisional Always (permanent on macOS, M1).
            grantAlways(provisional: true)
        case (.alwaysUpgrade, .changeToAlwaysAllow), (.legacyAlways, .allowAlways):
            // P3, P5.
            grantAlways(provisional: false)
        case (.alwaysUpgrade, .keepOnlyWhileUsing):
            // P3: stays When In Use; the delegate hears nothing.
            return [.noEffect(.unchanged)]
        case (.alwaysSecond, .keepOnlyWhileUsing):
            // P4: back to When In Use, the event is not delivered.
            grantWhenInUse()
            return [.eventDelivered(false)]
        case (.alwaysSecond, .changeToAlwaysAllow):
            // P4: permanent Always, the event is delivered, no status change is reported.
            provisional = false
            return [.eventDelivered(true)]
        case (.fullAccuracy, .allowFullAccuracy):
            // P6.
            temporaryFullAccuracy = true
        case (.fullAccuracy, .keepReducedAccuracy):
            // V2: no session held now asks again.
            declineFullAccuracyForHeldSessions()
            return [.noEffect(.unchanged)]
        default:
            // Unreachable: offeredChoices lists only the pairs above. Kept as a no-op, not a trap.
            return [.noEffect(.unchanged)]
        }
        return []
    }

    /// When In Use, which macOS stores as permanent Always (M1).
    private mutating func grantWhenInUse() {
        if context.effectivePlatform == .macOS {
            grantAlways(provisional: false)
            return
        }
        authorization = .authorizedWhenInUse
        temporary = false
        provisional = false
    }

    /// Always; never provisional on macOS (M1).
    private mutating func grantAlways(provisional: Bool) {
        authorization = .authorizedAlways
        temporary = false
        self.provisional = provisional && context.effectivePlatform != .macOS
    }

    // MARK: - E1

    /// E1: an Always event shows the second prompt in Provisional Always, is delivered in
    /// permanent Always, and is dropped otherwise.
    mutating func applyAlwaysEvent() -> [Effect] {
        guard status == .authorizedAlways else { return [.eventDelivered(false)] }
        if !provisional { return [.eventDelivered(true)] }
        if pendingPrompt == nil { return show(.alwaysSecond) }
        return [.eventDelivered(false)]
    }

    // MARK: - S1

    /// S1: leaving use ends Allow Once (back to notDetermined, escalation reset as for a new
    /// install, *decision*) and temporary full accuracy. A pending prompt stays pending.
    /// V1 and V2 ride along: `terminated` suspends sessions for a relaunch, the foreground
    /// activates sessions that waited for it.
    mutating func applyAppState(_ state: AppState, backgroundIndicator: Bool) -> [Effect] {
        let wasInUse = isInUse
        inUse = state == .foreground || (state == .background && backgroundIndicator)
        inForeground = state == .foreground
        var effects: [Effect] = []
        switch state {
        case .terminated: effects = suspendSessionsForRelaunch()
        case .foreground: effects = activateWaitingSessions()
        case .background: break
        }
        if wasInUse && !isInUse { leaveUse() }
        return effects
    }

    /// S1's consequences of the app no longer being in use.
    mutating func leaveUse() {
        if temporary {
            authorization = .notDetermined
            temporary = false
            alwaysPromptUsed = false
        }
        temporaryFullAccuracy = false
    }

    // MARK: - T rules

    /// T1 and T2. Always on tvOS or visionOS is rejected before anything changes.
    mutating func applySettings(
        authorization setting: SettingsAuthorization?, preciseLocation: Bool?
    ) throws(AuthorizationRejection) {
        let platform = context.effectivePlatform
        if setting == .askEveryTime {
            throw AuthorizationRejection(
                .notOnThisPlatform, "data.authorization: askEveryTime is Android's; Apple's Settings offer never, askNextTime, whileUsing, always",
                field: "data.authorization")
        }
        if setting == .always && (platform == .tvOS || platform == .visionOS) {
            throw AuthorizationRejection(
                .unsupportedSetting,
                "settingsChanged: authorization always does not exist in \(platform.rawValue) Settings")
        }
        // O2: a Settings change in between means a later notDetermined is no Allow Once.
        inferredAllowWhileUsing = false
        if let setting {
            switch setting {
            case .never:
                authorization = .denied
            case .askNextTime:
                // *(decision)* the escalation resets: the app may ask again as on a new install.
                authorization = .notDetermined
                alwaysPromptUsed = false
            case .whileUsing:
                authorization = platform == .macOS ? .authorizedAlways : .authorizedWhenInUse
            case .always:
                authorization = .authorizedAlways
            case .askEveryTime:
                break
            }
            provisional = false
            temporary = false
            pendingPrompt = nil
        }
        if let preciseLocation {
            accuracy = preciseLocation ? .full : .reduced
            if !preciseLocation { temporaryFullAccuracy = false }
        }
    }

    // MARK: - O1, O2

    /// O1: the device is the truth. A matching report confirms; a different one reconciles the
    /// state to it. O2 first: a report that answers the pending prompt is applied as that answer.
    ///
    /// *(decisions)* `denied` also ends provisional, temporary and a pending prompt (a denied app
    /// has no prompt on screen); `notDetermined` resets the escalation as Settings' "Ask Next
    /// Time" does, and keeps a pending prompt, which may still be on screen.
    mutating func applyObservation(_ observed: AuthorizationStatus, accuracy observedAccuracy: Accuracy?) -> [Effect] {
        if let prompt = pendingPrompt, locationServicesEnabled, !restricted,
           let choice = inferredChoice(for: prompt, observed: observed, accuracy: observedAccuracy) {
            return applyInferredAnswer(prompt, choice, observed: observed, accuracy: observedAccuracy)
        }
        let before = status
        let beforeAccuracy = effectiveAccuracy
        if observed == before && (observedAccuracy == nil || observedAccuracy == beforeAccuracy) {
            return [.noEffect(.confirmed)]
        }
        // O2: When In Use inferred as Allow While Using, now notDetermined with no Settings
        // change in between (which would have cleared the mark): it was Allow Once.
        let corrected = observed == .notDetermined && inferredAllowWhileUsing
        reconcile(observed, accuracy: observedAccuracy)
        var effects: [Effect] = [.reconciled(from: before, to: status)]
        if beforeAccuracy != effectiveAccuracy {
            effects.append(.accuracyChanged(from: beforeAccuracy, to: effectiveAccuracy))
        }
        if corrected {
            inferredAllowWhileUsing = false
            effects.append(.answerCorrected(prompt: .whenInUse, from: .allowWhileUsing, to: .allowOnce))
        }
        return effects
    }

    /// O2's table: the choice that an observed status implies for the pending prompt, when the
    /// table names one and the prompt offers it here. Answers that change nothing the app can
    /// see (keep When In Use at `alwaysUpgrade`, Allow at `alwaysSecond`, keep reduced
    /// accuracy) have no row: the prompt stays pending.
    ///
    /// *(decision)* On macOS, where every grant is Always (M1), the `whenInUse` prompt answered
    /// Allow is observed as authorizedAlways, and is inferred as `allowWhileUsing`.
    func inferredChoice(for prompt: Prompt, observed: AuthorizationStatus, accuracy: Accuracy?) -> PromptChoice? {
        let choice: PromptChoice?
        switch (prompt, observed) {
        case (.whenInUse, .authorizedWhenInUse): choice = .allowWhileUsing
        case (.whenInUse, .authorizedAlways): choice = context.effectivePlatform == .macOS ? .allowWhileUsing : nil
        case (.whenInUse, .denied), (.alwaysFirst, .denied), (.legacyAlways, .denied): choice = .dontAllow
        case (.alwaysFirst, .authorizedAlways): choice = .allowWhileUsing
        case (.alwaysFirst, .authorizedWhenInUse): choice = .allowOnce
        case (.alwaysUpgrade, .authorizedAlways): choice = .changeToAlwaysAllow
        case (.alwaysSecond, .authorizedWhenInUse): choice = .keepOnlyWhileUsing
        case (.legacyAlways, .authorizedAlways): choice = .allowAlways
        case (.legacyAlways, .authorizedWhenInUse): choice = .allowWhileUsing
        case (.fullAccuracy, .authorizedWhenInUse), (.fullAccuracy, .authorizedAlways):
            choice = accuracy == .full ? .allowFullAccuracy : nil
        default: choice = nil
        }
        guard let choice, prompt.offeredChoices(in: context).contains(choice) else { return nil }
        return choice
    }

    /// O2: applies the inferred answer by its P rule, then reconciles whatever the report still
    /// says differently (O1). Effects: `answerInferred`, then `reconciled`.
    private mutating func applyInferredAnswer(
        _ prompt: Prompt, _ choice: PromptChoice, observed: AuthorizationStatus, accuracy observedAccuracy: Accuracy?
    ) -> [Effect] {
        let before = status
        let beforeAccuracy = effectiveAccuracy
        // The choice is one the prompt offers, so its P rule cannot refuse it.
        _ = try? applyResponse(choice)
        if status != observed || (observedAccuracy != nil && observedAccuracy != effectiveAccuracy) {
            reconcile(observed, accuracy: observedAccuracy)
        }
        // Allow Once looks the same at this prompt: remember, so that a later notDetermined can
        // correct it.
        inferredAllowWhileUsing = prompt == .whenInUse && choice == .allowWhileUsing
            && authorization == .authorizedWhenInUse && prompt.offeredChoices(in: context).contains(.allowOnce)
        var effects: [Effect] = [.answerInferred(prompt: prompt, choice: choice), .reconciled(from: before, to: status)]
        if beforeAccuracy != effectiveAccuracy {
            effects.append(.accuracyChanged(from: beforeAccuracy, to: effectiveAccuracy))
        }
        return effects
    }

    /// O1's reconciliation: the state made to match the reported status and accuracy.
    private mutating func reconcile(_ observed: AuthorizationStatus, accuracy observedAccuracy: Accuracy?) {
        if observed != status {
            switch observed {
            case .restricted:
                restricted = true
            case .denied:
                restricted = false
                if locationServicesEnabled {
                    authorization = .denied
                    provisional = false
                    temporary = false
                    pendingPrompt = nil
                }
            case .notDetermined:
                restricted = false
                locationServicesEnabled = true
                authorization = .notDetermined
                provisional = false
                temporary = false
                alwaysPromptUsed = false
            case .authorizedWhenInUse, .authorizedAlways:
                restricted = false
                locationServicesEnabled = true
                let wasProvisional = authorization == .authorizedAlways && provisional
                let wasTemporary = authorization == .authorizedWhenInUse && temporary
                if observed == .authorizedAlways || context.effectivePlatform == .macOS {
                    authorization = .authorizedAlways
                    provisional = wasProvisional && context.effectivePlatform != .macOS
                    temporary = false
                } else {
                    authorization = .authorizedWhenInUse
                    provisional = false
                    temporary = wasTemporary
                }
                pendingPrompt = nil
            }
        }
        if let observedAccuracy, observedAccuracy != effectiveAccuracy {
            accuracy = observedAccuracy
            temporaryFullAccuracy = false
        }
        if authorization != .authorizedWhenInUse { inferredAllowWhileUsing = false }
    }
}
