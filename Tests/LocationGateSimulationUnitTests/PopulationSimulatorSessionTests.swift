import Foundation
import LocationAuthorization
import LocationGateSimulation
import Testing

/// The simulated population's iOS 18 share (SPEC §11), with the reducer alone: every device's
/// events applied to a `DeviceState` as ingest would, none rejected, and the new paths taken.
@Suite("Simulated population: the iOS 18 share exercises sessions, Core Location's prompts, relaunches and diagnostics",
       .timeLimit(.minutes(1)))
struct PopulationSimulatorSessionTests {
    @Test("Devices that all use the iOS 18 APIs: none rejected or refused, and sessions, V2 and V3 prompts, re-takes, Always sessions, background modes and delivery diagnostics all occur")
    func sessionPaths() {
        let tally = PopulationTally.replay(PopulationSimulator(seed: 2024, modernShare: 1), devices: 0..<300)
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
        let tally = PopulationTally.replay(PopulationSimulator(seed: 2024, observationsOnly: true, modernShare: 1), devices: 0..<300)
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
            let tally = PopulationTally.replay(PopulationSimulator(seed: 77, observationsOnly: observationsOnly), devices: devices)
            #expect(tally.rejected.isEmpty && tally.refused.isEmpty, "\(tally.rejected.prefix(3)) \(tally.refused.prefix(3))")
            #expect(tally.modernDevices == modern)
        }
    }
}
