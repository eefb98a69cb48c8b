/// The iOS 18 rules (SPEC §11, ids V1-V5): service sessions, the background activity session,
/// Core Location's own prompts on a session's behalf, and diagnostics. Sources are Apple's
/// CLServiceSession, CLBackgroundActivitySession, CLLocationUpdate and CLMonitor pages, the
/// iOS 18 SDK headers and WWDC24 session 10212, summed up in `docs/rules.md`.
extension DeviceState {
    // MARK: - V1: sessions

    /// V1 `serviceSessionChanged`. An `always` requirement on tvOS is refused whatever the
    /// version, as A9 refuses an Always request; a platform without sessions changes nothing.
    mutating func applySessionChange(_ change: ServiceSessionChange) throws(AuthorizationRejection) -> [Effect] {
        if change.requirement == .always && context.effectivePlatform == .tvOS {
            throw AuthorizationRejection(
                .unsupportedRequest, "serviceSessionChanged: requirement always is not supported on tvOS, which only offers When In Use")
        }
        guard context.hasServiceSessions else { return [.noEffect(.sessionsUnsupported)] }
        let key = change.session
        guard change.action == .started, let requirement = change.requirement else {
            guard sessionState.sessions.removeValue(forKey: key) != nil else { return [.noEffect(.unchanged)] }
            return [.sessionChanged(session: key, active: false)]
        }
        let held = sessionState.sessions[key]
        if held == nil && sessionState.sessions.count >= ServiceSessionState.maxSessions {
            throw AuthorizationRejection(
                .tooManySessions,
                "serviceSessionChanged: the device already holds \(ServiceSessionState.maxSessions) sessions; invalidate one first")
        }
        var effects: [Effect] = []
        // K3 for the session's purpose key: it is held anyway, and never asks for full accuracy.
        var declined = false
        if let purposeKey = change.fullAccuracyPurposeKey, !context.declaresPurposeKey(purposeKey) {
            effects.append(.failed(.missingPurposeKey, keys: [purposeKey]))
            declined = true
        }
        // A re-take in the relaunch window: the same key and requirement of a resumable session.
        let retaken = held.map { $0.resumable && $0.requirement == requirement } ?? false
        if let held, held.fullAccuracyPurposeKey == change.fullAccuracyPurposeKey { declined = declined || held.fullAccuracyDeclined }
        let session = ServiceSession(
            requirement: requirement, fullAccuracyPurposeKey: change.fullAccuracyPurposeKey, active: retaken || isInUse,
            fullAccuracyDeclined: declined)
        sessionState.sessions[key] = session
        if held?.requirement != session.requirement || held?.fullAccuracyPurposeKey != session.fullAccuracyPurposeKey
            || held?.active != session.active {
            effects.append(.sessionChanged(session: key, active: session.active))
        }
        return effects
    }

    /// V1 at `appStateChanged terminated` and at `contextReported` (a launch may come without
    /// `terminated`): active sessions and an active background activity become resumable, and
    /// sessions neither active nor resumable go.
    mutating func suspendSessionsForRelaunch() -> [Effect] {
        var effects: [Effect] = []
        for key in sessionState.sessions.keys.sorted() {
            guard var session = sessionState.sessions[key] else { continue }
            if session.active {
                session.active = false
                session.resumable = true
                sessionState.sessions[key] = session
                effects.append(.sessionChanged(session: key, active: false))
            } else if !session.resumable {
                sessionState.sessions.removeValue(forKey: key)
                effects.append(.sessionChanged(session: key, active: false))
            }
        }
        if sessionState.backgroundActivity {
            sessionState.backgroundActivity = false
            sessionState.backgroundActivityResumable = true
        }
        return effects
    }

    /// A context report naming a platform or version without sessions (or background activity
    /// sessions) drops what it cannot hold, and suspends the rest as any launch does.
    mutating func dropUnsupportedSessions() -> [Effect] {
        if !context.hasBackgroundActivitySessions {
            sessionState.backgroundActivity = false
            sessionState.backgroundActivityResumable = false
        }
        guard !context.hasServiceSessions else { return suspendSessionsForRelaunch() }
        let keys = sessionState.sessions.keys.sorted()
        sessionState.sessions = [:]
        return keys.map { .sessionChanged(session: $0, active: false) }
    }

    /// V1: the relaunch window closes at the first event other than `contextReported`,
    /// `serviceSessionChanged`, `backgroundActivityChanged` and `diagnosticObserved`; whatever
    /// was not re-taken by then goes.
    mutating func closeRelaunchWindow(before event: LocationEvent) -> [Effect] {
        switch event {
        case .contextReported, .serviceSessionChanged, .backgroundActivityChanged, .diagnosticObserved:
            return []
        default:
            break
        }
        guard sessionState.relaunchWindowOpen else { return [] }
        sessionState.backgroundActivityResumable = false
        var effects: [Effect] = []
        for key in sessionState.sessions.keys.sorted() where sessionState.sessions[key]?.resumable == true {
            sessionState.sessions.removeValue(forKey: key)
            effects.append(.sessionChanged(session: key, active: false))
        }
        return effects
    }

    /// V1: sessions started out of use become active at the next `appStateChanged` to the
    /// foreground.
    mutating func activateWaitingSessions() -> [Effect] {
        var effects: [Effect] = []
        for key in sessionState.sessions.keys.sorted() {
            guard var session = sessionState.sessions[key], !session.active, !session.resumable else { continue }
            session.active = true
            sessionState.sessions[key] = session
            effects.append(.sessionChanged(session: key, active: true))
        }
        return effects
    }

    // MARK: - V2, V3: Core Location asks for a session's goal

    /// V2 after every applied event: in the foreground with no prompt pending, Core Location
    /// asks for the first unmet goal of an active session (When In Use, then the Always
    /// escalation, then full accuracy), with no request from the app. V3 follows: an Allow Once
    /// grant that lapsed (S1) is asked for again when the app returns to the foreground.
    mutating func askForSessionGoals() -> [Effect] {
        guard inForeground, pendingPrompt == nil, !sessionState.sessions.isEmpty else { return [] }
        let active = sessionState.sessions.values.filter(\.active)
        let platform = context.effectivePlatform
        if status == .notDetermined && active.contains(where: { $0.requirement != .none }) {
            let missing = UsageDescriptionKey.missingForWhenInUse(in: context)
            if !missing.isEmpty { return reportMissingKeysOnce(missing) }
            pendingPrompt = .whenInUse
            return [.promptShown(.whenInUse)]
        }
        if status == .authorizedWhenInUse && !temporary && platform != .visionOS && !alwaysPromptUsed
            && active.contains(where: { $0.requirement == .always }) {
            let missing = UsageDescriptionKey.missingForAlways(in: context)
            if !missing.isEmpty { return reportMissingKeysOnce(missing) }
            alwaysPromptUsed = true
            pendingPrompt = .alwaysUpgrade
            return [.promptShown(.alwaysUpgrade)]
        }
        if status.isAuthorized && accuracy == .reduced && !temporaryFullAccuracy
            && active.contains(where: { session in
                guard let purposeKey = session.fullAccuracyPurposeKey else { return false }
                return !session.fullAccuracyDeclined && context.declaresPurposeKey(purposeKey)
            }) {
            pendingPrompt = .fullAccuracy
            return [.promptShown(.fullAccuracy)]
        }
        return []
    }

    /// A8's failure for a prompt a session would have shown, once until the next
    /// `contextReported` (which may bring the key).
    private mutating func reportMissingKeysOnce(_ keys: [String]) -> [Effect] {
        guard !sessionState.promptFailureReported else { return [] }
        sessionState.promptFailureReported = true
        return [.failed(.missingUsageDescription, keys: keys)]
    }

    /// V2: the person kept reduced accuracy, so no session held now asks for full accuracy again.
    mutating func declineFullAccuracyForHeldSessions() {
        for key in sessionState.sessions.keys {
            sessionState.sessions[key]?.fullAccuracyDeclined = true
        }
    }

    // MARK: - V5: background activity

    /// V5 `backgroundActivityChanged`.
    mutating func applyBackgroundActivity(active: Bool) -> [Effect] {
        guard context.hasBackgroundActivitySessions else { return [.noEffect(.sessionsUnsupported)] }
        guard active else {
            let wasInUse = isInUse
            sessionState.backgroundActivity = false
            sessionState.backgroundActivityResumable = false
            if wasInUse && !isInUse { leaveUse() }
            return []
        }
        if sessionState.backgroundActivity { return [] }
        if !context.declaresBackgroundLocationMode {
            return [.failed(.missingBackgroundMode, keys: [UsageDescriptionKey.backgroundModes])]
        }
        guard inForeground || sessionState.backgroundActivityResumable else {
            return [.noEffect(.insufficientlyInUse)]
        }
        sessionState.backgroundActivity = true
        sessionState.backgroundActivityResumable = false
        return []
    }

    // MARK: - V4: diagnostics

    /// V4: a diagnostic reconciles the state as O1 does, denial flags first, and answers a
    /// pending prompt as O2 does when no request is in progress.
    mutating func applyDiagnostic(_ diagnostic: Diagnostic) -> [Effect] {
        guard context.hasDiagnostics(from: diagnostic.source) else { return [.noEffect(.sessionsUnsupported)] }
        let flags = diagnostic.flags
        let before = self
        let beforeStatus = status
        let beforeAccuracy = effectiveAccuracy
        var effects: [Effect] = []
        if let answer = inferredAnswer(to: diagnostic) {
            // The choice is one the prompt offers, so its P rule cannot refuse it.
            _ = try? applyResponse(answer.1)
            effects.append(.answerInferred(prompt: answer.0, choice: answer.1))
        }
        if flags.contains(.authorizationRestricted) {
            restricted = true
        } else if flags.contains(.authorizationDeniedGlobally) {
            // Location Services off; the app's own grant is kept (G1).
            restricted = false
            locationServicesEnabled = false
        } else if flags.contains(.authorizationDenied) {
            restricted = false
            locationServicesEnabled = true
            if authorization != .denied {
                authorization = .denied
                provisional = false
                temporary = false
                pendingPrompt = nil
            }
        } else {
            // Not denied, not restricted: an app authorization of denied stays until an
            // observation or a Settings change says what it became.
            restricted = false
            locationServicesEnabled = true
        }
        if flags.contains(.accuracyLimited) {
            accuracy = .reduced
            temporaryFullAccuracy = false
        }
        if diagnostic.source == .monitor {
            sessionState.monitorLimited = flags.contains(.conditionLimitExceeded)
        }
        // Core Location sets `serviceSessionRequired` only for an app that adopted
        // NSLocationRequireExplicitServiceSession (Apple's header): the diagnostic proves it, as a
        // context report would.
        if flags.contains(.serviceSessionRequired) { context.requireExplicitServiceSession = true }
        if authorization != .authorizedWhenInUse { inferredAllowWhileUsing = false }
        let accuracyEffect: [Effect] =
            beforeAccuracy != effectiveAccuracy ? [.accuracyChanged(from: beforeAccuracy, to: effectiveAccuracy)] : []
        if !effects.isEmpty {
            return effects + (beforeStatus != status ? [.reconciled(from: beforeStatus, to: status)] : []) + accuracyEffect
        }
        if self != before {
            return [.reconciled(from: beforeStatus, to: status)] + accuracyEffect
        }
        return [.noEffect(flags.contains(where: \.describesDeliveryOnly) ? .deliveryOnly : .confirmed)]
    }

    /// V4's answers: `authorizationDenied` alone is O2's `denied` column;
    /// `alwaysAuthorizationDenied` keeps When In Use at the escalation; `fullAccuracyDenied`
    /// keeps reduced accuracy. Never while a request is in progress, restricted or with
    /// Location Services off.
    private func inferredAnswer(to diagnostic: Diagnostic) -> (Prompt, PromptChoice)? {
        let flags = diagnostic.flags
        guard let prompt = pendingPrompt, !flags.contains(.authorizationRequestInProgress),
              !flags.contains(.authorizationRestricted), !flags.contains(.authorizationDeniedGlobally)
        else { return nil }
        let choice: PromptChoice?
        switch prompt {
        case .whenInUse, .alwaysFirst, .legacyAlways:
            choice = flags.contains(.authorizationDenied) ? .dontAllow : nil
        case .alwaysUpgrade, .alwaysSecond:
            choice = diagnostic.source == .serviceSession && flags.contains(.alwaysAuthorizationDenied) ? .keepOnlyWhileUsing : nil
        case .fullAccuracy:
            choice = flags.contains(.fullAccuracyDenied) ? .keepReducedAccuracy : nil
        case .foreground, .backgroundDialog, .backgroundSettings, .precise, .locationButton:
            choice = nil
        }
        guard let choice, prompt.offeredChoices(in: context).contains(choice) else { return nil }
        return (prompt, choice)
    }
}
