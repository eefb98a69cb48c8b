import Foundation
import LocationAuthorization
import LocationGateSimulation
import Testing

/// The simulated population's Android 17 devices (SPEC §12, "The location button"), with the
/// reducer alone: every device's events read back from their JSON and applied to a `DeviceState`
/// as ingest would, none rejected, and the paths of B1-B8 taken, each recognised by the effects
/// and state changes the real rules give (`PopulationTally.countButton`).
@Suite("Simulated population: Android 17 devices take every path of the location button (B1-B8); the other Android devices stay as they were",
       .timeLimit(.minutes(1)))
struct PopulationSimulatorLocationButtonTests {
    @Test("Button devices alone: none rejected or refused, only Android's events, and consent dialogs, direct grants, declines to a precise block, lapses, the manifest flag's refusals and approximate-only dialog, and sessions opened, closed and failed all occur")
    func buttonPaths() {
        let simulator = PopulationSimulator(seed: 2037, platform: .android, buttonShare: 1)
        let devices = 0..<400
        for index in devices { #expect(simulator.usesLocationButton(index)) }
        let tally = PopulationTally.replay(simulator, devices: devices)
        #expect(tally.rejected.isEmpty, "every simulated event is accepted: \(tally.rejected.prefix(5))")
        #expect(tally.refused.isEmpty, "\(tally.refused.prefix(5))")
        #expect(tally.notAndroid.isEmpty, "\(tally.notAndroid.prefix(5))")
        #expect(tally.androidDevices == 400 && tally.buttonDevices == 400, "\(tally.buttonDevices)")
        #expect(tally.apiLevels == Set([LocationButton.firstAPILevel]), "\(tally.apiLevels.sorted())")
        #expect(tally.targetSdks.isSubset(of: Set([35, 36, 37])), "\(tally.targetSdks.sorted())")

        // B3: the first and second consent dialogs answered Allow (promptShown(locationButton),
        // answerInferred allow), every time over persistent approximate, then direct grants.
        #expect(tally.buttonFirstConsents > 30, "B3 first consent: \(tally)")
        #expect(tally.buttonSecondConsents > 0, "B3 second consent: \(tally)")
        #expect(tally.buttonConsentsOverApproximate > 0, "B3 over persistent approximate: \(tally)")
        #expect(tally.buttonDirectGrants > 0, "B3 direct grant after two consents: \(tally)")
        #expect(tally.buttonAlreadyGranted > 0, "B2: \(tally)")
        // B4: Don't allow, twice in a row to a precise block, then refusals with nothing shown.
        #expect(tally.buttonDeclines > 10, "B4 declines: \(tally)")
        #expect(tally.buttonPreciseBlocks > 0, "B4 precise blocked by two declines: \(tally)")
        #expect(tally.buttonBlockedAfterDeclines > 0, "B4 blocked after two declines: \(tally)")
        // B6: the grant found gone after the app left the foreground, back to what was held.
        #expect(tally.buttonLapseMismatches.isEmpty, "\(tally.buttonLapseMismatches.prefix(5))")
        #expect(tally.buttonLapses > 10, "B6 back to no grant: \(tally)")
        #expect(tally.buttonLapsesToApproximate > 0, "B6 back to approximate: \(tally)")
        // B8: fine refused at once, and the approximate-only dialog, never answered with precise.
        #expect(tally.onlyForLocationButton > 0, "B8 onlyForLocationButton: \(tally)")
        #expect(tally.approximateOnlyAnswers > 0, "B8 approximate-only dialog: \(tally)")
        #expect(tally.preciseFromApproximateOnly.isEmpty, "\(tally.preciseFromApproximateOnly.prefix(5))")
        // B1: sessionChanged("locationButton", true / false), failed(locationButtonError).
        #expect(tally.buttonSessionsOpened > 100, "B1 opened: \(tally)")
        #expect(tally.buttonSessionsClosed > 50, "B1 closed: \(tally)")
        #expect(tally.buttonSessionFailures > 10, "B1 failed: \(tally)")
        #expect(tally.buttonSessionsEndedByTermination > 0, "B1 terminated: \(tally)")
        // The other Android paths still occur on these devices.
        #expect((tally.prompts[.foreground] ?? 0) > 50, "\(tally)")
        #expect(tally.reinstalls > 0 && tally.settingsChanges > 0, "\(tally)")
        for index in [0, 1, 17, 399] {
            #expect(simulator.device(index) == simulator.device(index), "the same seed gives the same events")
        }
    }

    @Test("The default share: about 10% of the Android devices on API 37 with the button, never an Apple device; every other Android device exactly as without them; none rejected")
    func defaultShare() {
        let android = PopulationSimulator(seed: 77, platform: .android)
        #expect(android.buttonShare == PopulationSimulator.defaultButtonShare)
        var without = android
        without.buttonShare = 0
        let devices = 0..<400
        let buttonTypes: Set<EventType> = [.locationButtonSession, .locationButtonResult]
        var button = 0
        for index in devices {
            let events = android.device(index)
            let reportsButton = events.contains { buttonTypes.contains($0.event.type) }
            guard case .contextReported(let context)? = events.first?.event else {
                Issue.record("device \(index) starts without its context")
                continue
            }
            if android.usesLocationButton(index) {
                button += 1
                #expect(context.apiLevel == LocationButton.firstAPILevel && context.locationButtonAvailable, "device \(index)")
                #expect(reportsButton, "device \(index) reports the button")
            } else {
                #expect(!without.usesLocationButton(index))
                #expect(events == without.device(index), "device \(index) is as in a population without the button")
                #expect((28...35).contains(context.apiLevel ?? 0), "device \(index)")
                #expect(!reportsButton, "device \(index)")
            }
        }
        #expect((20...65).contains(button), "\(button) of \(devices.count)")

        // Only Android devices: none in the ios population; in mixed, those of its Android share.
        let ios = PopulationSimulator(seed: 77)
        let mixed = PopulationSimulator(seed: 77, platform: .mixed)
        for index in devices {
            #expect(!ios.usesLocationButton(index))
            if mixed.usesLocationButton(index) { #expect(mixed.runsAndroid(index) && android.usesLocationButton(index)) }
        }

        let tally = PopulationTally.replay(android, devices: devices)
        #expect(tally.rejected.isEmpty, "\(tally.rejected.prefix(5))")
        #expect(tally.refused.isEmpty, "\(tally.refused.prefix(5))")
        #expect(tally.notAndroid.isEmpty, "\(tally.notAndroid.prefix(5))")
        #expect(tally.buttonDevices == button)
        #expect(tally.apiLevels.contains(LocationButton.firstAPILevel) && !tally.apiLevels.contains(36), "\(tally.apiLevels.sorted())")
        #expect(tally.buttonLapseMismatches.isEmpty && tally.preciseFromApproximateOnly.isEmpty)
    }
}
