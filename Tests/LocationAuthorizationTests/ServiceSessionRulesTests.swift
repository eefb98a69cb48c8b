import Testing

@testable import LocationAuthorization

func startSession(_ key: String, _ requirement: SessionRequirement, purposeKey: String? = nil) -> LocationEvent {
    .serviceSessionChanged(.started(key, requirement, fullAccuracyPurposeKey: purposeKey))
}

func diagnostic(_ source: DiagnosticSource, session: String? = nil, _ flags: Set<DiagnosticFlag> = []) -> LocationEvent {
    .diagnosticObserved(Diagnostic(source: source, session: source == .serviceSession ? (session ?? "nav") : session, flags: flags))
}

let foreground = LocationEvent.appStateChanged(.foreground, backgroundIndicator: false)
let background = LocationEvent.appStateChanged(.background, backgroundIndicator: false)
let terminated = LocationEvent.appStateChanged(.terminated, backgroundIndicator: false)

@Suite("Service sessions and diagnostics: V1-V5", .timeLimit(.minutes(1)))
struct ServiceSessionRulesTests {
    @Test("V1 a session started in use is held and active; out of use it waits for the foreground")
    func v1StartAndActivate() {
        var state = makeDevice(.iOS, "18.0")
        #expect(state.accept(startSession("nav", .none)) == [.sessionChanged(session: "nav", active: true)])
        #expect(state.sessionState.sessions["nav"]?.active == true)
        state.accept(background)
        #expect(state.accept(startSession("trip", .none)) == [.sessionChanged(session: "trip", active: false)])
        #expect(state.sessionState.sessions["trip"] == ServiceSession(requirement: .none, active: false))
        // The session started in the foreground stays active in the background.
        #expect(state.sessionState.sessions["nav"]?.active == true)
        #expect(state.accept(foreground) == [.sessionChanged(session: "trip", active: true)])
    }

    @Test("V1 invalidated removes a session; an unknown key changes nothing; the same start again is silent")
    func v1InvalidateAndReplace() {
        var state = makeDevice(.iOS, "18.0")
        state.accept(startSession("nav", .none))
        #expect(state.accept(startSession("nav", .none)).isEmpty)
        #expect(state.accept(startSession("nav", .none, purposeKey: "Nav")) == [.sessionChanged(session: "nav", active: true)])
        #expect(state.accept(.serviceSessionChanged(.invalidated("nav"))) == [.sessionChanged(session: "nav", active: false)])
        #expect(state.sessionState.sessions.isEmpty)
        #expect(state.accept(.serviceSessionChanged(.invalidated("nav"))) == [.noEffect(.unchanged)])
    }

    @Test("V1 terminated makes sessions resumable; a re-take in the relaunch window restores them, the next other event drops the rest")
    func v1Relaunch() {
        var state = whenInUseDevice(.iOS, "18.0")
        state.accept(startSession("nav", .whenInUse))
        state.accept(startSession("log", .none))
        state.accept(background)
        state.accept(startSession("late", .none))  // inactive: goes at termination
        #expect(state.accept(terminated) == [
            .sessionChanged(session: "late", active: false), .sessionChanged(session: "log", active: false),
            .sessionChanged(session: "nav", active: false),
        ])
        #expect(state.sessionState.sessions["nav"] == ServiceSession(requirement: .whenInUse, active: false, resumable: true))
        #expect(state.sessionState.sessions["late"] == nil)
        // The relaunch: a context report keeps the window open; the re-take is active though
        // the app is not in use.
        state.accept(.contextReported(DeviceContext(appVersion: "2.0")))
        #expect(state.accept(startSession("nav", .whenInUse)) == [.sessionChanged(session: "nav", active: true)])
        #expect(state.sessionState.sessions["nav"]?.resumable == false)
        #expect(state.sessionState.sessions["log"]?.resumable == true)
        // A resumable session counts for gates until the window closes.
        #expect(state.sessionState.holdsEffectiveAuthorizingSession)
        #expect(state.accept(.alwaysEventOccurred(.visits)) == [.sessionChanged(session: "log", active: false), .eventDelivered(false)])
        #expect(state.sessionState.sessions.keys.sorted() == ["nav"])
    }

    @Test("V1 a context report (a launch without terminated) suspends sessions too; another requirement is no re-take")
    func v1ContextReport() {
        var state = makeDevice(.iOS, "18.0")
        state.accept(startSession("nav", .none))
        state.accept(background)
        #expect(state.accept(.contextReported(DeviceContext())) == [.sessionChanged(session: "nav", active: false)])
        #expect(state.accept(startSession("nav", .whenInUse)) == [.sessionChanged(session: "nav", active: false)])
        #expect(state.sessionState.sessions["nav"] == ServiceSession(requirement: .whenInUse, active: false))
    }

    @Test("V1 no sessions on macOS or before iOS 18; always on tvOS is refused whatever the version; at most 32 sessions")
    func v1Platforms() {
        var mac = makeDevice(.macOS, "15.0")
        #expect(mac.accept(startSession("nav", .always)) == [.noEffect(.sessionsUnsupported)])
        #expect(mac.sessionState.sessions.isEmpty)
        var old = makeDevice(.iOS, "17.4")
        #expect(old.accept(startSession("nav", .whenInUse)) == [.noEffect(.sessionsUnsupported)])
        var catalyst = makeDevice(.macCatalyst, "15.0")
        #expect(catalyst.accept(startSession("nav", .whenInUse)).contains(.sessionChanged(session: "nav", active: true)))
        var tv = makeDevice(.tvOS, "17.0")
        tv.expectRejection(startSession("nav", .always), .unsupportedRequest)
        var state = makeDevice(.iOS, "18.0")
        for index in 0..<ServiceSessionState.maxSessions { state.accept(startSession("s\(index)", .none)) }
        state.expectRejection(startSession("one-more", .none), .tooManySessions)
        #expect(state.accept(startSession("s0", .whenInUse)).contains(.sessionChanged(session: "s0", active: true)))
    }

    @Test("V2 an active session asks When In Use by itself, in the foreground, after the event's own effects")
    func v2WhenInUse() {
        var state = makeDevice(.iOS, "18.0")
        #expect(state.accept(startSession("nav", .always)) == [.sessionChanged(session: "nav", active: true), .promptShown(.whenInUse)])
        #expect(state.pendingPrompt == .whenInUse)
        // The alwaysUpgrade follows the When In Use grant at once (A4's single opportunity).
        #expect(state.accept(respond(.allowWhileUsing)) == [
            .statusChanged(from: .notDetermined, to: .authorizedWhenInUse), .promptShown(.alwaysUpgrade),
        ])
        #expect(state.alwaysPromptUsed)
        #expect(state.accept(respond(.keepOnlyWhileUsing)) == [.noEffect(.unchanged)])
        // Spent: no second escalation.
        state.accept([background, foreground])
        #expect(state.pendingPrompt == nil)
    }

    @Test("V2 a none session and a session out of the foreground ask nothing")
    func v2NoGoal() {
        var state = makeDevice(.iOS, "18.0")
        #expect(state.accept(startSession("nav", .none)) == [.sessionChanged(session: "nav", active: true)])
        state.accept(background)
        state.accept(.appStateChanged(.background, backgroundIndicator: true))
        #expect(state.accept(startSession("trip", .whenInUse)) == [.sessionChanged(session: "trip", active: true)])
        #expect(state.pendingPrompt == nil)
        #expect(state.accept(foreground) == [.promptShown(.whenInUse)])
    }

    @Test("V2 a missing usage key fails once until the next context report; the session is held")
    func v2MissingKey() {
        var state = makeDevice(.iOS, "18.0", keys: [])
        #expect(state.accept(startSession("nav", .whenInUse)) == [
            .sessionChanged(session: "nav", active: true),
            .failed(.missingUsageDescription, keys: [UsageDescriptionKey.whenInUse]),
        ])
        state.accept(background)
        #expect(state.accept(foreground).isEmpty)
        state.accept(.contextReported(DeviceContext(usageDescriptions: [UsageDescriptionKey.whenInUse])))
        state.accept(startSession("nav", .whenInUse))
        #expect(state.pendingPrompt == .whenInUse)
    }

    @Test("V2 full accuracy: asked for a declared purpose key, not again once kept reduced; K3 fails at start")
    func v2FullAccuracy() {
        var state = makeDevice(.iOS, "18.0", purposeKeys: ["Nav"])
        state.accept([requestWhenInUse, respond(.allowWhileUsing), .settingsChanged(authorization: nil, preciseLocation: false)])
        #expect(state.accept(startSession("other", .whenInUse, purposeKey: "Other")) == [
            .failed(.missingPurposeKey, keys: ["Other"]), .sessionChanged(session: "other", active: true),
        ])
        #expect(state.pendingPrompt == nil)
        #expect(state.accept(startSession("nav", .whenInUse, purposeKey: "Nav")) == [
            .sessionChanged(session: "nav", active: true), .promptShown(.fullAccuracy),
        ])
        #expect(state.accept(respond(.keepReducedAccuracy)) == [.noEffect(.unchanged)])
        state.accept([background, foreground])
        #expect(state.pendingPrompt == nil)
        // A session started after the answer asks again.
        #expect(state.accept(startSession("nav2", .whenInUse, purposeKey: "Nav")).last == .promptShown(.fullAccuracy))
    }

    @Test("V3 an Allow Once grant that lapsed is asked for again when the app returns to the foreground")
    func v3ReAsk() {
        var state = makeDevice(.iOS, "18.0")
        state.accept(startSession("nav", .whenInUse))
        #expect(state.accept(respond(.allowOnce)) == [.statusChanged(from: .notDetermined, to: .authorizedWhenInUse)])
        #expect(state.accept(background) == [.statusChanged(from: .authorizedWhenInUse, to: .notDetermined)])
        #expect(state.pendingPrompt == nil)
        #expect(state.accept(foreground) == [.promptShown(.whenInUse)])
    }

    @Test("V4 denial flags reconcile first: restricted, globally denied, denied; none of them clears both")
    func v4Denials() {
        var state = whenInUseDevice(.iOS, "18.0")
        #expect(state.accept(diagnostic(.liveUpdates, [.authorizationRestricted, .authorizationDenied])) == [.reconciled(from: .authorizedWhenInUse, to: .restricted)])
        #expect(state.accept(diagnostic(.monitor, [.authorizationDeniedGlobally, .authorizationDenied])) == [.reconciled(from: .restricted, to: .denied)])
        #expect(!state.locationServicesEnabled && state.authorization == .authorizedWhenInUse)
        #expect(state.accept(diagnostic(.liveUpdates)) == [.reconciled(from: .denied, to: .authorizedWhenInUse)])
        #expect(state.accept(diagnostic(.liveUpdates, [.authorizationDenied])) == [.reconciled(from: .authorizedWhenInUse, to: .denied)])
        #expect(state.authorization == .denied)
        // Denied stays until an observation or Settings say what it became.
        #expect(state.accept(diagnostic(.liveUpdates)) == [.noEffect(.confirmed)])
        #expect(state.accept(diagnostic(.liveUpdates, [.stationary])) == [.noEffect(.deliveryOnly)])
        #expect(state.accept(diagnostic(.liveUpdates, [.insufficientlyInUse])) == [.noEffect(.confirmed)])
        // serviceSessionRequired proves NSLocationRequireExplicitServiceSession, as a context would.
        #expect(state.context.requireExplicitServiceSession == nil)
        #expect(state.accept(diagnostic(.liveUpdates, [.insufficientlyInUse, .serviceSessionRequired])) == [.reconciled(from: .denied, to: .denied)])
        #expect(state.context.requireExplicitServiceSession == true)
        #expect(state.accept(diagnostic(.liveUpdates, [.serviceSessionRequired])) == [.noEffect(.confirmed)])
    }

    @Test("V4 answers a pending prompt as O2 does, never while a request is in progress")
    func v4Answers() {
        var state = makeDevice(.iOS, "18.0")
        state.accept(startSession("nav", .always))
        #expect(state.accept(diagnostic(.serviceSession, [.authorizationRequestInProgress])) == [.noEffect(.confirmed)])
        #expect(state.pendingPrompt == .whenInUse)
        #expect(state.accept(diagnostic(.serviceSession, [.authorizationDenied])) == [
            .answerInferred(prompt: .whenInUse, choice: .dontAllow), .reconciled(from: .notDetermined, to: .denied),
        ])
        var escalating = makeDevice(.iOS, "18.0")
        escalating.accept([startSession("nav", .always), respond(.allowWhileUsing)])
        #expect(escalating.pendingPrompt == .alwaysUpgrade)
        // Only the session's own diagnostic carries alwaysAuthorizationDenied.
        #expect(escalating.accept(diagnostic(.serviceSession, [.alwaysAuthorizationDenied])) == [
            .answerInferred(prompt: .alwaysUpgrade, choice: .keepOnlyWhileUsing),
        ])
        #expect(escalating.pendingPrompt == nil && escalating.status == .authorizedWhenInUse)
        var precise = makeDevice(.iOS, "18.0", purposeKeys: ["Nav"])
        precise.accept([requestWhenInUse, respond(.allowWhileUsing), .settingsChanged(authorization: nil, preciseLocation: false)])
        precise.accept(startSession("nav", .whenInUse, purposeKey: "Nav"))
        #expect(precise.accept(diagnostic(.serviceSession, [.fullAccuracyDenied])) == [
            .answerInferred(prompt: .fullAccuracy, choice: .keepReducedAccuracy),
        ])
        #expect(precise.sessionState.sessions["nav"]?.fullAccuracyDeclined == true)
    }

    @Test("V4 accuracyLimited reduces accuracy, its absence never restores it; conditionLimitExceeded sets monitorLimited")
    func v4AccuracyAndMonitor() {
        var state = whenInUseDevice(.iOS, "18.0")
        #expect(state.accept(diagnostic(.liveUpdates, [.accuracyLimited])) == [
            .reconciled(from: .authorizedWhenInUse, to: .authorizedWhenInUse), .accuracyChanged(from: .full, to: .reduced),
        ])
        #expect(state.accept(diagnostic(.liveUpdates)) == [.noEffect(.confirmed)])
        #expect(state.accuracy == .reduced)
        #expect(state.accept(diagnostic(.monitor, [.conditionLimitExceeded])) == [.reconciled(from: .authorizedWhenInUse, to: .authorizedWhenInUse)])
        #expect(state.sessionState.monitorLimited)
        #expect(state.accept(diagnostic(.liveUpdates)) == [.noEffect(.confirmed)])
        #expect(state.accept(diagnostic(.monitor, [.persistenceUnavailable])) == [.reconciled(from: .authorizedWhenInUse, to: .authorizedWhenInUse)])
        #expect(!state.sessionState.monitorLimited)
    }

    @Test("V4 diagnostics exist where sessions do, and on macOS 15 from live updates and monitors")
    func v4Platforms() {
        var mac = makeDevice(.macOS, "15.0")
        #expect(mac.accept(diagnostic(.liveUpdates, [.authorizationDenied])) == [.reconciled(from: .notDetermined, to: .denied)])
        #expect(mac.accept(diagnostic(.serviceSession, [])) == [.noEffect(.sessionsUnsupported)])
        var old = makeDevice(.iOS, "17.4")
        #expect(old.accept(diagnostic(.monitor, [.authorizationDenied])) == [.noEffect(.sessionsUnsupported)])
        var tv = makeDevice(.tvOS, "18.0")
        #expect(tv.accept(diagnostic(.backgroundActivity, [])) == [.noEffect(.sessionsUnsupported)])
    }

    @Test("V5 a background activity needs the background mode and the foreground, keeps the app in use, and is re-taken after a relaunch")
    func v5BackgroundActivity() {
        var noMode = makeDevice(.iOS, "18.0")
        noMode.accept(.contextReported(DeviceContext(backgroundLocationMode: false)))
        #expect(noMode.accept(.backgroundActivityChanged(active: true)) == [.failed(.missingBackgroundMode, keys: ["UIBackgroundModes"])])
        var state = makeDevice(.iOS, "18.0")
        state.accept([requestWhenInUse, respond(.allowOnce), background])
        state.accept([foreground, requestWhenInUse, respond(.allowOnce)])
        #expect(state.accept(.backgroundActivityChanged(active: true)).isEmpty)
        #expect(state.sessionState.backgroundActivity)
        // In use: Allow Once survives the background.
        #expect(state.accept(background).isEmpty)
        #expect(state.temporary)
        // Ending it out of use ends Allow Once (S1).
        #expect(state.accept(.backgroundActivityChanged(active: false)) == [.statusChanged(from: .authorizedWhenInUse, to: .notDetermined)])
        #expect(state.accept(.backgroundActivityChanged(active: true)) == [.noEffect(.insufficientlyInUse)])
        // Re-taken in the relaunch window.
        state.accept([foreground, .backgroundActivityChanged(active: true), terminated])
        #expect(!state.sessionState.backgroundActivity && state.sessionState.backgroundActivityResumable)
        state.accept(.contextReported(DeviceContext()))
        #expect(state.accept(.backgroundActivityChanged(active: true)).isEmpty)
        #expect(state.sessionState.backgroundActivity && !state.sessionState.backgroundActivityResumable)
        var tv = makeDevice(.tvOS, "18.0")
        #expect(tv.accept(.backgroundActivityChanged(active: true)) == [.noEffect(.sessionsUnsupported)])
    }

    @Test("V6 a session's prompts are told from a request's and E1's")
    func v6SessionPrompts() {
        #expect(Effect.sessionPrompts(in: [.promptShown(.whenInUse)], of: .authorizationRequested).isEmpty)
        #expect(Effect.sessionPrompts(in: [.promptShown(.alwaysSecond)], of: .alwaysEventOccurred).isEmpty)
        #expect(Effect.sessionPrompts(in: [.noEffect(.alreadyDetermined), .promptShown(.fullAccuracy)], of: .authorizationRequested) == [.fullAccuracy])
        #expect(Effect.sessionPrompts(in: [.sessionChanged(session: "nav", active: true), .promptShown(.whenInUse)], of: .serviceSessionChanged) == [.whenInUse])
        #expect(Effect.sessionPrompts(in: [.promptShown(.whenInUse)], of: .appStateChanged) == [.whenInUse])
    }
}

@Suite("Service sessions: edges of V1, V2 and V5", .timeLimit(.minutes(1)))
struct ServiceSessionEdgeTests {
    @Test("V5 a relaunch that drops a background activity which kept the app in use applies S1")
    func relaunchEndsAllowOnce() {
        var state = makeDevice(.iOS, "18.0")
        state.accept([requestWhenInUse, respond(.allowOnce), .backgroundActivityChanged(active: true), background])
        #expect(state.temporary)
        #expect(state.accept(.contextReported(DeviceContext())) == [.statusChanged(from: .authorizedWhenInUse, to: .notDetermined)])
        #expect(state.sessionState.backgroundActivityResumable && !state.temporary)
    }

    @Test("V2 a purpose key the build no longer declares asks nothing; V5 a held activity started again is no change")
    func declaredAtAskTime() {
        var state = makeDevice(.iOS, "18.0", purposeKeys: ["Nav"])
        state.accept([requestWhenInUse, respond(.allowWhileUsing), .settingsChanged(authorization: nil, preciseLocation: false)])
        state.accept(.contextReported(DeviceContext(temporaryUsagePurposeKeys: [], backgroundLocationMode: true)))
        state.accept(foreground)
        #expect(state.accept(startSession("nav", .whenInUse, purposeKey: "Nav")) == [
            .failed(.missingPurposeKey, keys: ["Nav"]), .sessionChanged(session: "nav", active: true),
        ])
        state.accept(.contextReported(DeviceContext(temporaryUsagePurposeKeys: ["Nav"])))
        // The session whose key failed K3 never asks, even re-taken; a new one does.
        state.accept(startSession("nav", .whenInUse, purposeKey: "Nav"))
        #expect(state.pendingPrompt == nil)
        state.accept(startSession("nav2", .whenInUse, purposeKey: "Nav"))
        #expect(state.pendingPrompt == .fullAccuracy)
        state.accept(respond(.allowFullAccuracy))
        #expect(state.accept(.backgroundActivityChanged(active: true)).isEmpty)
        #expect(state.accept(.backgroundActivityChanged(active: true)).isEmpty)
        #expect(state.sessionState.backgroundActivity)
    }
}
