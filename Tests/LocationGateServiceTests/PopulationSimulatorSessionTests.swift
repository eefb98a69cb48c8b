import Foundation
import LocationAuthorization
import LocationGateService
import Testing

/// The simulated population's iOS 18 share (SPEC §11), with the reducer alone: every device's
/// events applied to a `DeviceState` as ingest would, none rejected, and the new paths taken.
@Suite("Simulated population: the iOS 18 share exercises sessions, Core Location's prompts, relaunches and diagnostics",
       .timeLimit(.minutes(1)))
struct PopulationSimulatorSessionTests {
    /// What a population's events did.
    struct Tally {
        var devices = 0
        var events = 0
        /// Devices whose context came from the iOS 18 share (it reports the explicit-session key).
        var modernDevices = 0
        var rejected: [String] = []
        /// Events whose JSON form ingest would refuse (422) or read otherwise.
        var refused: [String] = []
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
    }

    static func tally(_ simulator: PopulationSimulator, devices: Range<Int>) -> Tally {
        var tally = Tally()
        let encoder = JSONEncoder()
        let decoder = JSONDecoder()
        for index in devices {
            let submissions = simulator.device(index)
            tally.devices += 1
            tally.events += submissions.count
            if case .contextReported(let context)? = submissions.first?.event, context.requireExplicitServiceSession != nil {
                tally.modernDevices += 1
            }
            var state = DeviceState()
            var hadAllowOnce = false
            for submission in submissions {
                let event = submission.event
                do {
                    let decoded = try decoder.decode(EventSubmission.self, from: encoder.encode(submission))
                    if decoded.event != event { tally.refused.append("\(submission.deviceId) \(event): read as \(decoded.event)") }
                } catch {
                    tally.refused.append("\(submission.deviceId) \(event): \(error)")
                }
                let before = state
                let effects: [Effect]
                do {
                    effects = try state.apply(event)
                } catch {
                    tally.rejected.append("\(submission.deviceId) \(event): \(error)")
                    continue
                }
                if case .promptResponded = event { tally.answers += 1 }
                if effects.contains(where: { if case .sessionChanged = $0 { true } else { false } }) {
                    tally.sessionChanges += 1
                }
                if event.type != .authorizationRequested && event.type != .alwaysEventOccurred
                    && effects.contains(where: { if case .promptShown = $0 { true } else { false } }) {
                    tally.sessionPrompts += 1
                }
                if case .appStateChanged(.foreground, _, _) = event, hadAllowOnce, effects.contains(.promptShown(.whenInUse)) {
                    tally.reasked += 1
                }
                if state.temporary { hadAllowOnce = true }
                if case .serviceSessionChanged(let change) = event, change.action == .started,
                   before.sessionState.sessions[change.session]?.resumable == true,
                   effects.contains(.sessionChanged(session: change.session, active: true)) {
                    tally.retakes += 1
                }
                if effects.contains(where: { if case .failed(.missingBackgroundMode, _) = $0 { true } else { false } }) {
                    tally.missingBackgroundMode += 1
                }
                if effects.contains(.noEffect(.sessionsUnsupported)) { tally.sessionsUnsupported += 1 }
                if case .diagnosticObserved = event {
                    if effects == [.noEffect(.deliveryOnly)] { tally.deliveryOnly += 1 }
                    if effects.contains(where: { if case .answerInferred = $0 { true } else { false } }) {
                        tally.answeredByDiagnostics += 1
                    }
                }
            }
            if state.status == .authorizedAlways
                && state.sessionState.sessions.values.contains(where: { $0.requirement == .always && $0.active }) {
                tally.endingInEffectiveAlways += 1
            }
        }
        return tally
    }

    @Test("Devices that all use the iOS 18 APIs: none rejected or refused, and sessions, V2 and V3 prompts, re-takes, Always sessions, background modes and delivery diagnostics all occur")
    func sessionPaths() {
        let tally = Self.tally(PopulationSimulator(seed: 2024, modernShare: 1), devices: 0..<300)
        #expect(tally.rejected.isEmpty, "\(tally.rejected.prefix(5))")
        #expect(tally.refused.isEmpty, "\(tally.refused.prefix(5))")
        #expect(tally.modernDevices == 300)
        #expect(tally.sessionsUnsupported == 0, "every device of the share has the iOS 18 APIs")
        #expect(tally.sessionChanges > 100, "\(tally)")
        #expect(tally.sessionPrompts > 50, "V2: \(tally)")
        #expect(tally.reasked > 5, "V3: \(tally)")
        #expect(tally.retakes > 10, "V1 re-takes: \(tally)")
        #expect(tally.endingInEffectiveAlways > 0, "\(tally)")
        #expect(tally.missingBackgroundMode > 0, "V5: \(tally)")
        #expect(tally.deliveryOnly > 10, "V4: \(tally)")
        #expect(tally.answers > 100)
    }

    @Test("Reported as observations only: no answer is sent, and the answers a delegate cannot see come from session diagnostics (V4)")
    func observationsOnly() {
        let tally = Self.tally(PopulationSimulator(seed: 2024, observationsOnly: true, modernShare: 1), devices: 0..<300)
        #expect(tally.rejected.isEmpty, "\(tally.rejected.prefix(5))")
        #expect(tally.refused.isEmpty, "\(tally.refused.prefix(5))")
        #expect(tally.answers == 0)
        #expect(tally.answeredByDiagnostics > 5, "\(tally)")
        #expect(tally.sessionPrompts > 50, "\(tally)")
        #expect(tally.retakes > 10, "\(tally)")
    }

    @Test("The default mix: about 30% of devices in the iOS 18 share, the others exactly as without it, about as many events per device, the same events for a seed")
    func defaultMix() {
        let mixed = PopulationSimulator(seed: 77)
        let legacy = PopulationSimulator(seed: 77, modernShare: 0)
        let devices = 0..<400
        var modern = 0
        var mixedEvents = 0
        var legacyEvents = 0
        for index in devices {
            let events = mixed.device(index)
            let before = legacy.device(index)
            mixedEvents += events.count
            legacyEvents += before.count
            let sessionTypes: [EventType] = [.serviceSessionChanged, .backgroundActivityChanged, .diagnosticObserved]
            #expect(!before.contains(where: { sessionTypes.contains($0.event.type) }))
            if mixed.usesServiceSessions(index) {
                modern += 1
                #expect(events == mixed.device(index), "the same seed gives the same events")
            } else {
                #expect(events == before, "device \(index) is as in a population without the iOS 18 share")
            }
        }
        #expect((80...160).contains(modern), "\(modern) of \(devices.count)")
        let ratio = Double(mixedEvents) / Double(legacyEvents)
        #expect(ratio > 0.95 && ratio < 1.3, "\(mixedEvents) events against \(legacyEvents) without the iOS 18 share")
        for observationsOnly in [false, true] {
            let tally = Self.tally(PopulationSimulator(seed: 77, observationsOnly: observationsOnly), devices: devices)
            #expect(tally.rejected.isEmpty && tally.refused.isEmpty, "\(tally.rejected.prefix(3)) \(tally.refused.prefix(3))")
            #expect(tally.modernDevices == modern)
        }
    }
}
