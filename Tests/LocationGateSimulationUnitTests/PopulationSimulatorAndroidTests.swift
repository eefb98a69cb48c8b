import Foundation
import LocationAuthorization
import LocationGateSimulation
import Testing

/// The simulated population's Android devices (SPEC §12), with the reducer alone: every device's
/// events applied to a `DeviceState` as ingest would, none rejected, every event read back from
/// its JSON as ingest reads it, and the paths of D1-D11 and I1 taken.
@Suite("Simulated population: Android devices take every path of D1-D11 and I1; mixed populations keep the Apple devices as they were",
       .timeLimit(.minutes(1)))
struct PopulationSimulatorAndroidTests {
    @Test("Android devices alone: none rejected or refused, only Android's events, and blocks, dismissals, D6 corrections, both background prompts, precise upgrades, declines and blocks, D3, D2, undeclared permissions, D10 refusals, Settings revocations, resets, reinstalls and every ending status all occur")
    func androidPaths() {
        // Without the API 37 share (PopulationSimulator+LocationButton.swift, its own suite): the
        // devices and counts of D1-D11 as before it.
        let simulator = PopulationSimulator(seed: 2026, platform: .android, buttonShare: 0)
        let tally = PopulationTally.replay(simulator, devices: 0..<800)
        #expect(tally.rejected.isEmpty, "\(tally.rejected.prefix(5))")
        #expect(tally.refused.isEmpty, "\(tally.refused.prefix(5))")
        #expect(tally.notAndroid.isEmpty, "\(tally.notAndroid.prefix(5))")
        #expect(tally.androidDevices == 800 && tally.appleDevices == 0)
        #expect(tally.apiLevels == Set(28...35), "\(tally.apiLevels.sorted())")
        #expect(tally.targetSdks.contains(28) && tally.targetSdks.contains(29) && tally.targetSdks.contains(35), "\(tally.targetSdks.sorted())")
        #expect(tally.answered > 500, "\(tally)")
        #expect(tally.answeredAtOnce > 10, "D5: a blocked group answers at once: \(tally)")
        #expect(tally.blocked > 10, "D5: \(tally)")
        #expect(tally.corrected > 20, "D6: \(tally)")
        #expect((tally.prompts[.foreground] ?? 0) > 500, "D2: \(tally)")
        #expect((tally.prompts[.backgroundSettings] ?? 0) > 50, "D4, API 30+: \(tally)")
        #expect((tally.prompts[.backgroundDialog] ?? 0) > 3, "D4, API 29: \(tally)")
        #expect((tally.prompts[.precise] ?? 0) > 10, "D2, API 31+: \(tally)")
        #expect(tally.backgroundWithForeground > 20, "D3: \(tally)")
        #expect(tally.fineNeedsCoarse > 10, "D2: \(tally)")
        #expect(tally.foregroundFirst > 0, "D4: \(tally)")
        #expect(tally.notDeclared > 10, "D2: \(tally)")
        #expect(tally.foregroundServiceRefused > 0, "D10: \(tally)")
        #expect(tally.resets > 10, "D8: \(tally)")
        #expect(tally.settingsChanges > 50, "D7: \(tally)")
        #expect(tally.settingsRevocations > 10, "D7 revocations: \(tally)")
        #expect(tally.dismissed > 20, "D5 dismissals: \(tally)")
        #expect(tally.preciseDeclines > 10, "D11 declines: \(tally)")
        #expect(tally.preciseBlocked > 0, "D11 blocks: \(tally)")
        #expect(tally.reinstalls > 20, "I1: \(tally)")
        #expect(tally.locationSwitchedOff > 0, "\(tally)")
        for status in [AuthorizationStatus.authorizedAlways, .authorizedWhenInUse, .denied, .notDetermined] {
            #expect((tally.endings[status] ?? 0) > 10, "devices ending \(status): \(tally.endings)")
        }
        for index in [0, 1, 17, 400, 799] {
            #expect(simulator.device(index) == simulator.device(index), "the same seed gives the same events")
        }
    }

    @Test("Mixed: about 45% Android, both families ingested without a rejection; every other device exactly as in the ios population, which is the population with an Android share of 0")
    func mixedPopulation() {
        let mixed = PopulationSimulator(seed: 77, platform: .mixed)
        let ios = PopulationSimulator(seed: 77)
        var noAndroid = mixed
        noAndroid.androidShare = 0
        #expect(ios.androidShare == 0 && PopulationSimulator(seed: 77, platform: .ios).androidShare == 0)
        let devices = 0..<400
        var android = 0
        for index in devices {
            let before = ios.device(index)
            #expect(!ios.runsAndroid(index))
            #expect(before == noAndroid.device(index), "device \(index): ios is the population with an Android share of 0")
            if case .contextReported(let context)? = before.first?.event {
                #expect(context.platform != .android)
            }
            let events = mixed.device(index)
            if mixed.runsAndroid(index) {
                android += 1
                #expect(!mixed.usesServiceSessions(index))
                if case .contextReported(let context)? = events.first?.event {
                    #expect(context.platform == .android, "device \(index)")
                } else {
                    Issue.record("device \(index) starts without its context")
                }
            } else {
                #expect(events == before, "device \(index) is as in the ios population")
                #expect(mixed.usesServiceSessions(index) == ios.usesServiceSessions(index))
            }
        }
        #expect((130...230).contains(android), "\(android) of \(devices.count)")
        let tally = PopulationTally.replay(mixed, devices: devices)
        #expect(tally.rejected.isEmpty, "\(tally.rejected.prefix(5))")
        #expect(tally.refused.isEmpty, "\(tally.refused.prefix(5))")
        #expect(tally.notAndroid.isEmpty, "\(tally.notAndroid.prefix(5))")
        #expect(tally.androidDevices == android && tally.appleDevices == devices.count - android)
    }
}
