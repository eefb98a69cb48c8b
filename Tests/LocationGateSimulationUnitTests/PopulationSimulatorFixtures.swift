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
                } else {
                    tally.appleDevices += 1
                }
                if context.requireExplicitServiceSession != nil { tally.modernDevices += 1 }
            } else {
                tally.appleDevices += 1
            }
            var state = DeviceState()
            var hadAllowOnce = false
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
                tally.countSessions(event, effects, before: before, hadAllowOnce: hadAllowOnce)
                if state.temporary { hadAllowOnce = true }
            }
            tally.endings[state.status, default: 0] += 1
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
