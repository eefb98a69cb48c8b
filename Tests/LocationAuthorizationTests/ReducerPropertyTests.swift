import PropertyBased
import Testing

@testable import LocationAuthorization

/// Random event sequences on random platforms and OS versions. Each sequence is a list of
/// integers that `Scenario` turns into a context and events, so shrinking works on plain numbers.
struct Scenario {
    static let platforms = Platform.allCases
    static let versions: [String?] = [nil, "10.3", "11.0", "12.4", "13.0", "13.3", "13.4", "14.5", "17.4", "26.0"]
    static let keySets: [Set<String>?] = [
        nil, [UsageDescriptionKey.whenInUse], [UsageDescriptionKey.whenInUse, UsageDescriptionKey.alwaysAndWhenInUse],
        [UsageDescriptionKey.always], [],
    ]

    var context: DeviceContext
    var events: [LocationEvent]

    init(_ numbers: [Int]) {
        var numbers = numbers.makeIterator()
        func next(_ bound: Int) -> Int { (numbers.next() ?? 0) % bound }
        let platform = Self.platforms[next(Self.platforms.count)]
        context = DeviceContext(
            platform: platform, osVersion: Self.versions[next(Self.versions.count)].flatMap(OSVersion.init),
            usageDescriptions: Self.keySets[next(Self.keySets.count)],
            temporaryUsagePurposeKeys: next(4) == 0 ? [] : ["Nav"], defaultAccuracyReduced: next(3) == 0)
        events = []
        while let number = numbers.next() {
            events.append(Self.event(number))
        }
    }

    /// Requests and answers are weighted up so that sequences reach deep states.
    static func event(_ number: Int) -> LocationEvent {
        let pick = number % 1000
        let choices = PromptChoice.allCases
        switch pick % 20 {
        case 0...3: return .authorizationRequested(.always)
        case 4...5: return .authorizationRequested(.whenInUse)
        case 6: return .authorizationRequested(.temporaryFullAccuracy(pick % 3 == 0 ? "Other" : "Nav"))
        case 7...10: return .promptResponded(choices[(pick / 20) % choices.count])
        case 11: return .alwaysEventOccurred(AlwaysService.allCases[(pick / 20) % AlwaysService.allCases.count])
        case 12: return .appStateChanged(AppState.allCases[(pick / 20) % 3], backgroundIndicator: pick % 2 == 0)
        case 13:
            let settings = SettingsAuthorization.allCases
            return .settingsChanged(authorization: pick % 3 == 0 ? nil : settings[(pick / 20) % settings.count],
                                    preciseLocation: pick % 3 == 1 ? nil : pick % 2 == 0)
        case 14: return .locationServicesChanged(enabled: pick % 2 == 0)
        case 15: return .restrictionChanged(restricted: pick % 3 == 0)
        case 16:
            let statuses = AuthorizationStatus.allCases
            return .statusObserved(statuses[(pick / 20) % statuses.count], accuracy: pick % 3 == 0 ? nil : (pick % 2 == 0 ? .full : .reduced))
        case 17: return .contextReported(DeviceContext(osVersion: versions[(pick / 20) % versions.count].flatMap(OSVersion.init)))
        default: return .authorizationRequested(.always)
        }
    }

    var start: DeviceState {
        var state = DeviceState()
        _ = try? state.apply(.contextReported(context))
        return state
    }
}

/// Folds events, skipping rejected ones as the log does, and checks invariants after each step.
func fold(_ state: DeviceState, _ events: [LocationEvent], check: (DeviceState, LocationEvent, Transition) -> Void = { _, _, _ in }) -> DeviceState {
    var state = state
    for event in events {
        guard let transition = try? state.reduce(event) else { continue }
        check(state, event, transition)
        state = transition.state
    }
    return state
}

let scenarioInput = Gen.int(in: 0...1_000_000).array(of: 4...80)

@Suite("Reducer properties over random sequences", .timeLimit(.minutes(2)))
struct ReducerPropertyTests {
    @Test("The reducer never traps; provisional implies Always; temporary implies When In Use")
    func flagInvariants() async {
        await propertyCheck(count: 1000, input: scenarioInput) { numbers in
            let scenario = Scenario(numbers)
            _ = fold(scenario.start, scenario.events) { _, event, transition in
                let next = transition.state
                #expect(!next.provisional || next.authorization == .authorizedAlways, "\(event)")
                #expect(!next.temporary || next.authorization == .authorizedWhenInUse, "\(event)")
                #expect(!next.provisional || !next.temporary)
                if case .contextReported = event {} else if event.type != .appStateChanged && event.type != .settingsChanged
                    && event.type != .locationServicesChanged && event.type != .restrictionChanged {
                    #expect(!transition.effects.isEmpty, "\(event) must yield an effect")
                }
            }
        }
    }

    @Test("Once the Always escalation is spent, no always request shows a prompt until notDetermined")
    func escalationOnce() async {
        await propertyCheck(count: 1000, input: scenarioInput) { numbers in
            let scenario = Scenario(numbers)
            // Spent when an Always prompt was shown or A11 escalated silently; the authorization
            // returning to notDetermined (S1, T1 askNextTime, O1) starts the flow over.
            var spent = false
            _ = fold(scenario.start, scenario.events) { before, event, transition in
                let shown = transition.effects.contains { if case .promptShown = $0 { true } else { false } }
                if event == .authorizationRequested(.always) && spent {
                    #expect(!shown, "always request showed a prompt after the escalation: \(transition.effects)")
                }
                let alwaysPrompt = transition.effects.contains {
                    [.promptShown(.alwaysFirst), .promptShown(.alwaysUpgrade), .promptShown(.legacyAlways)].contains($0)
                }
                let silent = event == .authorizationRequested(.always)
                    && transition.effects.contains(.statusChanged(from: .authorizedWhenInUse, to: .authorizedAlways))
                if alwaysPrompt || silent { spent = true }
                // The app's own grant, not the derived status: a restriction or Location Services
                // being off can hide that Allow Once expired back to notDetermined underneath.
                if before.authorization != .notDetermined && transition.state.authorization == .notDetermined { spent = false }
                // Settings' "Ask Next Time" and a device reporting notDetermined start over even
                // while the grant already was notDetermined (T1 and O1 decisions).
                if case .settingsChanged(.askNextTime, _) = event { spent = false }
                if transition.effects.contains(where: { if case .reconciled(_, .notDetermined) = $0 { true } else { false } }) { spent = false }
            }
        }
    }

    @Test("While denied or restricted every request is noEffect (or fails on its keys first, A8)")
    func deniedIsFinal() async {
        await propertyCheck(count: 1000, input: scenarioInput) { numbers in
            let scenario = Scenario(numbers)
            _ = fold(scenario.start, scenario.events) { before, event, transition in
                guard case .authorizationRequested = event, before.status == .denied || before.status == .restricted else { return }
                #expect(transition.state == before)
                guard transition.effects.count == 1, let effect = transition.effects.first else {
                    Issue.record("one effect expected, got \(transition.effects)")
                    return
                }
                switch effect {
                case .noEffect(let reason):
                    #expect(reason == (before.status == .denied ? .denied : .restricted))
                case .failed:
                    break
                default:
                    Issue.record("\(effect) while \(before.status)")
                }
            }
        }
    }

    @Test("Folding a sequence in two parts equals folding it whole")
    func foldSplits() async {
        await propertyCheck(count: 600, input: scenarioInput, Gen.int(in: 0...80)) { numbers, cut in
            let scenario = Scenario(numbers)
            let split = min(cut, scenario.events.count)
            let whole = fold(scenario.start, scenario.events)
            let middle = fold(scenario.start, Array(scenario.events[..<split]))
            #expect(fold(middle, Array(scenario.events[split...])) == whole)
        }
    }

    @Test("A rejected event leaves the state unchanged, and decisions are defined for every state")
    func rejectionsAndDecisions() async {
        let features = [
            Feature(key: "a", requires: .always, services: [.regionMonitoring]),
            Feature(key: "b", requires: .whenInUse, services: [.standard], accuracy: .full),
            Feature(key: "c", requires: .whenInUse, services: [.locationPush, .heading]),
        ]
        await propertyCheck(count: 600, input: scenarioInput) { numbers in
            let scenario = Scenario(numbers)
            var state = scenario.start
            for event in scenario.events {
                var copy = state
                do {
                    _ = try copy.apply(event)
                } catch {
                    #expect(copy == state, "rejected \(event) changed the state")
                }
                state = copy
                for feature in features {
                    let decision = state.decide(feature, version: 1)
                    #expect(decision.enabled == (decision.reason == .authorized))
                    #expect(!decision.enabled || decision.status.isAuthorized)
                    #expect((decision.action == .fixUsageDescriptions) == (decision.missingKeys != nil))
                }
            }
        }
    }
}
