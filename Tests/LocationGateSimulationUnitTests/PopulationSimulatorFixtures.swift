import Foundation
import LocationAuthorization
import LocationGateSimulation

/// What a simulated population's events did, with the reducer alone: every device's events read
/// back from their JSON as ingest reads them, then applied to a `DeviceState` as ingest would.
/// One tally for every population (Apple, the iOS 18 share, Android, mixed), so that the round
/// trip and the reducer's bookkeeping are written once; each suite checks the counts it is about.
struct PopulationTally {
    var devices = 0
    var events = 0
    var rejected: [String] = []
    /// Events whose JSON form ingest would refuse (422) or read otherwise.
    var refused: [String] = []

    // Android (SPEC §12).
    var androidDevices = 0
    var appleDevices = 0
    /// Android devices' events that an Android app does not send: Apple's types, an
    /// `appStateChanged` without `foregroundService` or with the background indicator.
    var notAndroid: [String] = []
    var prompts: [Prompt: Int] = [:]
    /// `permissionsResult` events that answered a prompt (`answerInferred`).
    var answered = 0
    /// `permissionsResult` events with nothing pending (Android answered at once).
    var answeredAtOnce = 0
    var blocked = 0
    /// D6: a one-time grant found gone.
    var corrected = 0
    var backgroundWithForeground = 0
    var fineNeedsCoarse = 0
    var foregroundFirst = 0
    var grantedAtInstall = 0
    var notDeclared = 0
    var foregroundServiceRefused = 0
    var resets = 0
    var settingsChanges = 0
    /// D7: a Settings "Don't allow" or "Allow only while using" that revoked a grant.
    var settingsRevocations = 0
    /// D5, D11: dialogs closed without an answer.
    var dismissed = 0
    /// D11: "Keep approximate" at the upgrade dialog.
    var preciseDeclines = 0
    /// D11: requests for a blocked precise.
    var preciseBlocked = 0
    /// I1: reinstalls.
    var reinstalls = 0
    var locationSwitchedOff = 0
    /// Devices ending in each status.
    var endings: [AuthorizationStatus: Int] = [:]
    /// API levels of the Android devices.
    var apiLevels: Set<Int> = []
    var targetSdks: Set<Int> = []

    // The location button (SPEC §12, B1-B8).
    /// Android devices whose app declares the button on API 37 or later.
    var buttonDevices = 0
    /// B3: consent dialogs answered Allow: the first (no consent yet), the second (one), and over
    /// approximate location held persistently (no consent saved).
    var buttonFirstConsents = 0
    var buttonSecondConsents = 0
    var buttonConsentsOverApproximate = 0
    /// B3: grants with no dialog after two consents, one-time.
    var buttonDirectGrants = 0
    /// B2.
    var buttonAlreadyGranted = 0
    /// B4: "Don't allow"; the second of two in a row, which blocked precise; the refusals with
    /// nothing shown while precise is blocked so; direct grants device policy refused.
    var buttonDeclines = 0
    var buttonPreciseBlocks = 0
    var buttonBlockedAfterDeclines = 0
    var buttonNotGrantable = 0
    /// B6: an observation that found the button's grant gone after the app left the foreground,
    /// back to no grant or to the approximate location held before it.
    var buttonLapses = 0
    var buttonLapsesToApproximate = 0
    /// B6: lapses against the rule (still temporary, a correction of the button's answer, a
    /// denial or the consent changed, found without leaving the foreground).
    var buttonLapseMismatches: [String] = []
    /// B8: requests refused at once, and the approximate-only dialog answered.
    var onlyForLocationButton = 0
    var approximateOnlyAnswers = 0
    /// B8: that dialog answered with precise (it has no such choice).
    var preciseFromApproximateOnly: [String] = []
    /// B1: sessions opened, closed by the app, ended by termination; `failed` effects.
    var buttonSessionsOpened = 0
    var buttonSessionsClosed = 0
    var buttonSessionsEndedByTermination = 0
    var buttonSessionFailures = 0
    /// Devices that ended holding the button's one-time grant (`temporary`).
    var endingWithButtonGrant = 0

    // The iOS 18 share (SPEC §11).
    /// Devices whose context came from the iOS 18 share (it reports the explicit-session key).
    var modernDevices = 0
    /// `promptResponded` events.
    var answers = 0
    /// Events with a `sessionChanged` effect.
    var sessionChanges = 0
    /// V2: a prompt in an event that is no request and no Always event.
    var sessionPrompts = 0
    /// V3: the When In Use prompt again when the app comes back to the foreground.
    var reasked = 0
    /// V1: a resumable session started again in the relaunch window, active again.
    var retakes = 0
    var missingBackgroundMode = 0
    var sessionsUnsupported = 0
    /// V4: diagnostics that changed nothing and describe delivery.
    var deliveryOnly = 0
    /// V4: diagnostics that answered the pending prompt.
    var answeredByDiagnostics = 0
    /// Devices that end authorizedAlways with an active `always` session.
    var endingInEffectiveAlways = 0

    /// The tally of `simulator`'s `devices`.
    static func replay(_ simulator: PopulationSimulator, devices: Range<Int>) -> PopulationTally {
        var tally = PopulationTally()
        let encoder = JSONEncoder()
        for index in devices {
            let submissions = simulator.device(index)
            tally.devices += 1
            tally.events += submissions.count
            var android = false
            if case .contextReported(let context)? = submissions.first?.event {
                if context.platform == .android {
                    android = true
                    tally.androidDevices += 1
                    if let api = context.apiLevel { tally.apiLevels.insert(api) }
                    if let target = context.targetSdk { tally.targetSdks.insert(target) }
                    if context.locationButtonAvailable { tally.buttonDevices += 1 }
                } else {
                    tally.appleDevices += 1
                }
                if context.requireExplicitServiceSession != nil { tally.modernDevices += 1 }
            } else {
                tally.appleDevices += 1
            }
            var state = DeviceState()
            var hadAllowOnce = false
            var button = ButtonTrace()
            for submission in submissions {
                let event = submission.event
                do {
                    let decoded = try EventCoding.decode(EventSubmission.self, from: encoder.encode(submission))
                    if decoded.event != event { tally.refused.append("\(submission.deviceId) \(event): read as \(decoded.event)") }
                } catch {
                    tally.refused.append("\(submission.deviceId) \(event): \(error)")
                }
                if android {
                    if !event.type.isAccepted(by: .android) {
                        tally.notAndroid.append("\(submission.deviceId) \(event)")
                    }
                    if case .appStateChanged(_, let indicator, let service) = event, indicator || service == nil {
                        tally.notAndroid.append("\(submission.deviceId) \(event)")
                    }
                }
                let before = state
                let effects: [Effect]
                do {
                    effects = try state.apply(event)
                } catch {
                    tally.rejected.append("\(submission.deviceId) \(event): \(error)")
                    continue
                }
                tally.countAndroid(event, effects, before: before)
                tally.countButton(submission.deviceId, event, effects, before: before, after: state, trace: &button)
                tally.countSessions(event, effects, before: before, hadAllowOnce: hadAllowOnce)
                if state.temporary { hadAllowOnce = true }
            }
            tally.endings[state.status, default: 0] += 1
            if state.android.buttonGrant && state.temporary { tally.endingWithButtonGrant += 1 }
            if state.status == .authorizedAlways
                && state.sessionState.sessions.values.contains(where: { $0.requirement == .always && $0.active }) {
                tally.endingInEffectiveAlways += 1
            }
        }
        return tally
    }

    /// The effects and events of Android's rules (D1-D10).
    private mutating func countAndroid(_ event: LocationEvent, _ effects: [Effect], before: DeviceState) {
        for effect in effects {
            switch effect {
            case .answerInferred(_, .dismissed): dismissed += 1
            case .answerInferred(.precise, .keepApproximate): preciseDeclines += 1
            case .reset(.reinstalled): reinstalls += 1
            case .promptShown(let prompt): prompts[prompt, default: 0] += 1
            case .answerCorrected: corrected += 1
            case .noEffect(.blocked):
                blocked += 1
                if before.android.preciseBlocked && before.android.foreground == .approximate { preciseBlocked += 1 }
            case .noEffect(.backgroundWithForeground): backgroundWithForeground += 1
            case .noEffect(.fineNeedsCoarse): fineNeedsCoarse += 1
            case .noEffect(.foregroundFirst): foregroundFirst += 1
            case .noEffect(.grantedAtInstall): grantedAtInstall += 1
            case .failed(.notDeclared, _): notDeclared += 1
            case .failed(.foregroundServiceNotAllowed, _): foregroundServiceRefused += 1
            default: break
            }
        }
        switch event {
        case .permissionsResult:
            if effects.contains(where: { if case .answerInferred = $0 { true } else { false } }) {
                answered += 1
            } else {
                answeredAtOnce += 1
            }
        case .permissionsReset: resets += 1
        case .settingsChanged(let setting, _):
            settingsChanges += 1
            if (setting == .never || setting == .whileUsing) && before.family == .android
                && (before.android.foreground != .none && setting == .never || before.android.background) {
                settingsRevocations += 1
            }
        case .locationServicesChanged(enabled: false): locationSwitchedOff += 1
        default: break
        }
    }

    /// What one device's button did so far, for the counts that read a sequence.
    struct ButtonTrace {
        /// "Don't allow" answers since precise's denials were last cleared.
        var declines = 0
        /// Precise is blocked by two of them.
        var preciseBlockedByDeclines = false
        /// The app left the foreground since the button last granted.
        var leftSinceGrant = false
    }

    /// The events and effects of the location button's rules (B1-B8); `before` and `after` are
    /// the device's state around `event`.
    private mutating func countButton(
        _ deviceID: String, _ event: LocationEvent, _ effects: [Effect], before: DeviceState, after: DeviceState, trace: inout ButtonTrace
    ) {
        let dialog = effects.contains(.promptShown(.locationButton))
        switch event {
        case .locationButtonResult(granted: true):
            trace.leftSinceGrant = false
            if effects == [.noEffect(.alreadyGranted)] {
                buttonAlreadyGranted += 1
            } else if dialog && effects.contains(.answerInferred(prompt: .locationButton, choice: .allow)) {
                if before.android.foreground != .none && !before.android.buttonGrant {
                    buttonConsentsOverApproximate += 1
                } else if before.android.buttonConsents == 0 && after.android.buttonConsents == 1 {
                    buttonFirstConsents += 1
                } else if before.android.buttonConsents == 1 && after.android.buttonConsents == 2 {
                    buttonSecondConsents += 1
                }
            } else if !dialog && before.android.buttonConsents == AndroidPermissionState.consentsForDirectGrant
                && before.android.foreground != .precise && after.android.foreground == .precise && after.temporary {
                buttonDirectGrants += 1
            }
        case .locationButtonResult(granted: false):
            if dialog && effects.contains(.answerInferred(prompt: .locationButton, choice: .dontAllow)) {
                buttonDeclines += 1
                trace.declines += 1
                if after.android.preciseBlocked && !before.android.preciseBlocked && trace.declines == 2 {
                    buttonPreciseBlocks += 1
                    trace.preciseBlockedByDeclines = true
                }
            } else if effects == [.noEffect(.blocked)] {
                if trace.preciseBlockedByDeclines && before.android.preciseBlocked { buttonBlockedAfterDeclines += 1 }
            } else if effects == [.noEffect(.notGrantable)] {
                buttonNotGrantable += 1
            }
        case .locationButtonSession(let sessionState, _):
            if effects.contains(.sessionChanged(session: LocationButton.sessionKey, active: true)) { buttonSessionsOpened += 1 }
            if sessionState == .closed && effects.contains(.sessionChanged(session: LocationButton.sessionKey, active: false)) {
                buttonSessionsClosed += 1
            }
            if effects.contains(where: { if case .failed(.locationButtonError, _) = $0 { true } else { false } }) {
                buttonSessionFailures += 1
            }
        case .appStateChanged(let appState, _, _):
            if appState != .foreground { trace.leftSinceGrant = true }
            if appState == .terminated && effects.contains(.sessionChanged(session: LocationButton.sessionKey, active: false)) {
                buttonSessionsEndedByTermination += 1
            }
        case .permissionsObserved:
            if before.android.buttonGrant && !after.android.buttonGrant && after.android.foreground != .precise {
                let correctsButton = effects.contains { if case .answerCorrected(.locationButton, _, _) = $0 { true } else { false } }
                if after.temporary || correctsButton || !trace.leftSinceGrant
                    || after.android.foregroundDenials != before.android.foregroundDenials
                    || after.android.preciseDenials != before.android.preciseDenials
                    || after.android.buttonConsents != before.android.buttonConsents {
                    buttonLapseMismatches.append("\(deviceID) \(event): \(effects)")
                } else if after.android.foreground == .approximate && before.android.approximateUnderButton {
                    buttonLapsesToApproximate += 1
                } else if after.android.foreground == .none {
                    buttonLapses += 1
                }
            }
        case .permissionsRequested:
            if effects.contains(.noEffect(.onlyForLocationButton)) { onlyForLocationButton += 1 }
        case .permissionsResult(let result):
            if before.context.fineOnlyForLocationButtonInForce && before.pendingPrompt == .foreground
                && before.android.pendingRequest.contains(.fine) {
                if result.granted.contains(.fine) {
                    preciseFromApproximateOnly.append("\(deviceID) \(event): \(effects)")
                }
                if effects.contains(.answerInferred(prompt: .foreground, choice: .approximateWhileUsing)) { approximateOnlyAnswers += 1 }
            }
        default:
            break
        }
        if after.android.preciseDenials == 0 {
            trace.declines = 0
        }
        if !after.android.preciseBlocked { trace.preciseBlockedByDeclines = false }
    }

    /// The effects and events of the iOS 18 rules (V1-V5); `before` is the device's state before
    /// `event`, and `hadAllowOnce` whether an earlier event left it temporary (Allow Once).
    private mutating func countSessions(_ event: LocationEvent, _ effects: [Effect], before: DeviceState, hadAllowOnce: Bool) {
        if case .promptResponded = event { answers += 1 }
        if effects.contains(where: { if case .sessionChanged = $0 { true } else { false } }) {
            sessionChanges += 1
        }
        if event.type != .authorizationRequested && event.type != .alwaysEventOccurred
            && effects.contains(where: { if case .promptShown = $0 { true } else { false } }) {
            sessionPrompts += 1
        }
        if case .appStateChanged(.foreground, _, _) = event, hadAllowOnce, effects.contains(.promptShown(.whenInUse)) {
            reasked += 1
        }
        if case .serviceSessionChanged(let change) = event, change.action == .started,
           before.sessionState.sessions[change.session]?.resumable == true,
           effects.contains(.sessionChanged(session: change.session, active: true)) {
            retakes += 1
        }
        if effects.contains(where: { if case .failed(.missingBackgroundMode, _) = $0 { true } else { false } }) {
            missingBackgroundMode += 1
        }
        if effects.contains(.noEffect(.sessionsUnsupported)) { sessionsUnsupported += 1 }
        if case .diagnosticObserved = event {
            if effects == [.noEffect(.deliveryOnly)] { deliveryOnly += 1 }
            if effects.contains(where: { if case .answerInferred = $0 { true } else { false } }) {
                answeredByDiagnostics += 1
            }
        }
    }
}
