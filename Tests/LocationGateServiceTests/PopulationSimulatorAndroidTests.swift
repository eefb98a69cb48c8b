import Foundation
import LocationAuthorization
import LocationGateService
import Testing

/// The simulated population's Android devices (SPEC §12), with the reducer alone: every device's
/// events applied to a `DeviceState` as ingest would, none rejected, every event read back from
/// its JSON as ingest reads it, and the paths of D1-D10 taken.
@Suite("Simulated population: Android devices take every path of D1-D10; mixed populations keep the Apple devices as they were",
       .timeLimit(.minutes(1)))
struct PopulationSimulatorAndroidTests {
    /// What a population's events did.
    struct Tally {
        var devices = 0
        var events = 0
        var androidDevices = 0
        var appleDevices = 0
        var rejected: [String] = []
        /// Events whose JSON form ingest would refuse (422) or read otherwise.
        var refused: [String] = []
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
        var locationSwitchedOff = 0
        /// Devices ending in each status.
        var endings: [AuthorizationStatus: Int] = [:]
        /// API levels of the Android devices.
        var apiLevels: Set<Int> = []
        var targetSdks: Set<Int> = []
    }

    static func tally(_ simulator: PopulationSimulator, devices: Range<Int>) -> Tally {
        var tally = Tally()
        let encoder = JSONEncoder()
        for index in devices {
            let submissions = simulator.device(index)
            tally.devices += 1
            tally.events += submissions.count
            var android = false
            if case .contextReported(let context)? = submissions.first?.event, context.platform == .android {
                android = true
                tally.androidDevices += 1
                if let api = context.apiLevel { tally.apiLevels.insert(api) }
                if let target = context.targetSdk { tally.targetSdks.insert(target) }
            } else {
                tally.appleDevices += 1
            }
            var state = DeviceState()
            for submission in submissions {
                let event = submission.event
                do {
                    let decoded = try EventCoding.decode(EventSubmission.self, from: encoder.encode(submission))
                    if decoded.event != event { tally.refused.append("\(submission.deviceId) \(event): read as \(decoded.event)") }
                } catch {
                    tally.refused.append("\(submission.deviceId) \(event): \(error)")
                }
                if android {
                    if !event.type.isAndroidOnly && !event.type.isSharedWithAndroid {
                        tally.notAndroid.append("\(submission.deviceId) \(event)")
                    }
                    if case .appStateChanged(_, let indicator, let service) = event, indicator || service == nil {
                        tally.notAndroid.append("\(submission.deviceId) \(event)")
                    }
                }
                let effects: [Effect]
                do {
                    effects = try state.apply(event)
                } catch {
                    tally.rejected.append("\(submission.deviceId) \(event): \(error)")
                    continue
                }
                for effect in effects {
                    switch effect {
                    case .promptShown(let prompt): tally.prompts[prompt, default: 0] += 1
                    case .answerCorrected: tally.corrected += 1
                    case .noEffect(.blocked): tally.blocked += 1
                    case .noEffect(.backgroundWithForeground): tally.backgroundWithForeground += 1
                    case .noEffect(.fineNeedsCoarse): tally.fineNeedsCoarse += 1
                    case .noEffect(.foregroundFirst): tally.foregroundFirst += 1
                    case .noEffect(.grantedAtInstall): tally.grantedAtInstall += 1
                    case .failed(.notDeclared, _): tally.notDeclared += 1
                    case .failed(.foregroundServiceNotAllowed, _): tally.foregroundServiceRefused += 1
                    default: break
                    }
                }
                switch event {
                case .permissionsResult:
                    if effects.contains(where: { if case .answerInferred = $0 { true } else { false } }) {
                        tally.answered += 1
                    } else {
                        tally.answeredAtOnce += 1
                    }
                case .permissionsReset: tally.resets += 1
                case .settingsChanged: tally.settingsChanges += 1
                case .locationServicesChanged(enabled: false): tally.locationSwitchedOff += 1
                default: break
                }
            }
            tally.endings[state.status, default: 0] += 1
        }
        return tally
    }

    @Test("Android devices alone: none rejected or refused, only Android's events, and blocks, D6 corrections, both background prompts, precise upgrades, D3, D2, undeclared permissions, D10 refusals, resets and every ending status all occur")
    func androidPaths() {
        let simulator = PopulationSimulator(seed: 2026, platform: .android)
        let tally = Self.tally(simulator, devices: 0..<800)
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
        let tally = Self.tally(mixed, devices: devices)
        #expect(tally.rejected.isEmpty, "\(tally.rejected.prefix(5))")
        #expect(tally.refused.isEmpty, "\(tally.refused.prefix(5))")
        #expect(tally.notAndroid.isEmpty, "\(tally.notAndroid.prefix(5))")
        #expect(tally.androidDevices == android && tally.appleDevices == devices.count - android)
    }
}
