import Foundation
import PropertyBased
import Testing

@testable import LocationAuthorization

/// Random Android sequences around the location button: API 36-38, targetSdk below and above
/// 31, manifests with and without the button and FINE, FINE only for the button or not; the
/// button's events mixed with every other Android event (`AndroidScenario.event`).
struct ButtonScenario {
    static let levels = [36, 37, 38]
    static let manifests: [Set<AndroidPermission>] = [
        buttonManifest, [.coarse, .fine, .locationButton], [.fine, .background, .locationButton], [.coarse, .fine, .background],
        [.coarse, .background, .locationButton],
    ]

    var context: DeviceContext
    var events: [LocationEvent]

    init(_ numbers: [Int]) {
        var numbers = numbers.makeIterator()
        func next(_ bound: Int) -> Int { (numbers.next() ?? 0) % bound }
        let api = Self.levels[next(Self.levels.count)]
        let target = [api, 30, 31, 34][next(4)]
        let manifest = Self.manifests[next(Self.manifests.count)]
        // The flag needs `fine` declared (else the context is refused).
        let fineOnly = manifest.contains(.fine) && next(2) == 0
        context = DeviceContext(
            platform: .android, apiLevel: api, targetSdk: target, declaredPermissions: manifest, fineOnlyForLocationButton: fineOnly)
        events = []
        while let number = numbers.next() { events.append(Self.event(number)) }
    }

    /// The button's results and sessions weighted up, so that sequences reach consents, blocks
    /// and lapses.
    static func event(_ number: Int) -> LocationEvent {
        let pick = number % 1000
        switch pick % 8 {
        case 0, 1: return .locationButtonResult(granted: true)
        case 2: return .locationButtonResult(granted: false)
        case 3:
            let state = LocationButtonSessionState.allCases[(pick / 8) % LocationButtonSessionState.allCases.count]
            return .locationButtonSession(state, cause: state == .failed && pick % 2 == 0 ? "SecurityException" : nil)
        default:
            return AndroidScenario.event(number / 8)
        }
    }

    var start: DeviceState {
        var state = DeviceState()
        _ = try? state.apply(.contextReported(context))
        return state
    }
}

@Suite("Android 17's location button: properties over random sequences", .timeLimit(.minutes(2)))
struct LocationButtonPropertyTests {
    static let features = [
        Feature(key: "share", requires: .whenInUse, services: [.standard], accuracy: .full),
        Feature(key: "nearby", requires: .whenInUse, services: [.standard]),
        Feature(key: "trips", requires: .always, services: [.standard], accuracy: .full),
        Feature(key: "trips-any", requires: .always, services: [.standard]),
        Feature(key: "tracking", requires: .whenInUse, services: [.standard], accuracy: .full, background: true),
        Feature(key: "geofence", requires: .whenInUse, services: [.regionMonitoring]),
    ]

    static func isButtonPrompt(_ effect: Effect) -> Bool {
        switch effect {
        case .promptShown(.locationButton), .answerInferred(.locationButton, _), .answerCorrected(.locationButton, _, _): true
        default: false
        }
    }

    @Test("B4, D11: a blocked precise is never prompted: no requestPrecise or showLocationButton, no dialog inferred")
    func blockedPreciseNeverPrompted() async {
        await propertyCheck(count: 1000, input: scenarioInput) { numbers in
            let scenario = ButtonScenario(numbers)
            _ = fold(scenario.start, scenario.events) { before, event, transition in
                let state = transition.state
                if state.android.preciseBlocked {
                    for feature in Self.features {
                        let action = state.decide(feature, version: 1).action
                        #expect(action != .requestPrecise && action != .showLocationButton, "\(feature.key): \(action) after \(event)")
                    }
                }
                if event == .locationButtonResult(granted: false) && (before.android.preciseBlocked || before.android.foregroundBlocked) {
                    #expect(!transition.effects.contains(where: Self.isButtonPrompt), "\(transition.effects)")
                    #expect(transition.state.android == before.android)
                }
            }
        }
    }

    @Test("A button grant never enables a feature that needs the background, Always or region monitoring")
    func buttonNeverServesBackground() async {
        await propertyCheck(count: 1000, input: scenarioInput) { numbers in
            let scenario = ButtonScenario(numbers)
            _ = fold(scenario.start, scenario.events) { _, event, transition in
                let state = transition.state
                #expect(state.temporary == state.android.buttonGrant, "temporary is the button's grant: \(event)")
                #expect(!state.temporary || state.android.foreground != .none)
                guard state.android.buttonGrant else { return }
                let without = state.withoutButtonGrant
                for feature in Self.features {
                    let decision = state.decide(feature, version: 1)
                    #expect(decision.enabled == (decision.reason == .authorized))
                    guard !feature.isSessionScoped(tier: decision.requiredTier) else { continue }
                    if decision.enabled {
                        #expect(without.decide(feature, version: 1).enabled, "\(feature.key) enabled by the button's grant after \(event)")
                    }
                }
            }
        }
    }

    @Test("B6: a lapse never counts a denial, sets no block and corrects no answer of the button")
    func lapseCountsNoDenial() async {
        await propertyCheck(count: 1000, input: scenarioInput) { numbers in
            let scenario = ButtonScenario(numbers)
            _ = fold(scenario.start, scenario.events) { before, event, transition in
                // A lapse is found by an observation: `permissionsObserved`, or a result Android
                // answered at once (no prompt pending).
                let observation: Bool
                switch event {
                case .permissionsObserved: observation = true
                case .permissionsResult: observation = before.pendingPrompt == nil
                default: observation = false
                }
                guard observation, before.android.buttonGrant, !transition.state.android.buttonGrant else { return }
                let (was, now) = (before.android, transition.state.android)
                #expect(now.foregroundDenials <= was.foregroundDenials && now.backgroundDenials <= was.backgroundDenials)
                #expect(now.preciseDenials <= was.preciseDenials)
                #expect((!now.foregroundBlocked || was.foregroundBlocked) && (!now.backgroundBlocked || was.backgroundBlocked))
                #expect(!now.preciseBlocked || was.preciseBlocked)
                #expect(now.buttonConsents == was.buttonConsents, "B6 keeps the consent")
                #expect(!transition.effects.contains(where: Self.isButtonPrompt), "\(transition.effects)")
                #expect(!transition.state.temporary)
            }
        }
    }

    @Test("B1, B5: outcomes without a result event infer nothing: no button dialog, no consent gained, no permission from a session")
    func silentOutcomesInferNothing() async {
        await propertyCheck(count: 1000, input: scenarioInput) { numbers in
            let scenario = ButtonScenario(numbers)
            _ = fold(scenario.start, scenario.events) { before, event, transition in
                guard event.type != .locationButtonResult else { return }
                #expect(!transition.effects.contains(where: Self.isButtonPrompt), "\(event): \(transition.effects)")
                #expect(transition.state.android.buttonConsents <= before.android.buttonConsents, "\(event)")
                if case .locationButtonSession(let sessionState, _) = event {
                    var expected = before
                    expected.android.locationButtonSession = sessionState == .opened
                    #expect(transition.state == expected, "B1 changes no permission")
                }
            }
        }
    }

    @Test("States with the button's members write and read back as Codable writes them")
    func storedStates() async {
        await propertyCheck(count: 300, input: scenarioInput) { numbers in
            let scenario = ButtonScenario(numbers)
            _ = fold(scenario.start, scenario.events) { _, _, transition in
                // The stored form keeps the `installId` in a column of its own, not in the state.
                var state = transition.state
                state.installID = nil
                let written = state.storedJSON
                #expect(DeviceState(storedJSON: written) == state, "\(written)")
                #expect((try? JSONDecoder().decode(DeviceState.self, from: Data(written.utf8))) == state)
            }
        }
    }
}
