import PropertyBased
import Testing

@testable import LocationAuthorization

/// Random Android sequences across API levels 22-35, targetSdk and manifests.
struct AndroidScenario {
    static let levels = [22, 28, 29, 30, 31, 33, 34, 35]
    static let manifests: [Set<AndroidPermission>?] = [nil, [.coarse, .fine], [.coarse], [.coarse, .fine, .background], [.fine, .background]]
    static let sets: [Set<AndroidPermission>] = [[.coarse, .fine], [.coarse], [.fine], [.background], [.coarse, .fine, .background], [.coarse, .background], []]

    var context: DeviceContext
    var events: [LocationEvent]

    init(_ numbers: [Int]) {
        var numbers = numbers.makeIterator()
        func next(_ bound: Int) -> Int { (numbers.next() ?? 0) % bound }
        let api = Self.levels[next(Self.levels.count)]
        let target = [api, 28, 30, 31, 34][next(5)]
        context = DeviceContext(platform: .android, apiLevel: api, targetSdk: target, declaredPermissions: Self.manifests[next(Self.manifests.count)])
        events = []
        while let number = numbers.next() { events.append(Self.event(number)) }
    }

    static func event(_ number: Int) -> LocationEvent {
        let pick = number % 1000
        let set = sets[(pick / 10) % sets.count]
        let other = sets[(pick / 70) % sets.count]
        switch pick % 10 {
        case 0, 1, 2:
            return .permissionsRequested(set.isEmpty ? [.coarse, .fine] : set)
        case 3, 4:
            return .permissionsResult(PermissionsResult(
                granted: set, denied: other.subtracting(set), rationale: pick % 3 == 0 ? nil : other, interrupted: pick % 17 == 0))
        case 5: return .permissionsObserved(granted: set, locationEnabled: pick % 4 == 0 ? nil : pick % 5 != 0)
        case 6: return .appStateChanged(AppState.allCases[(pick / 10) % 3], backgroundIndicator: false, foregroundService: pick % 3 == 0)
        case 7:
            let settings: [SettingsAuthorization?] = [.always, .whileUsing, .askEveryTime, .never, nil]
            let setting = settings[(pick / 10) % settings.count]
            return .settingsChanged(authorization: setting, preciseLocation: setting == nil ? pick % 2 == 0 : nil)
        case 8: return pick % 3 == 0 ? .permissionsReset(.unusedApp) : .locationServicesChanged(enabled: pick % 2 == 0)
        default:
            // A launch, now and then of another installation (I1).
            return .contextReported(DeviceContext(appVersion: "2.\(pick % 5)", installID: pick % 4 == 0 ? "install-\(pick % 3)" : nil))
        }
    }

    var start: DeviceState {
        var state = DeviceState()
        _ = try? state.apply(.contextReported(context))
        return state
    }
}

@Suite("Android properties over random sequences", .timeLimit(.minutes(2)))
struct AndroidPropertyTests {
    static let features = [
        Feature(key: "nearby", requires: .whenInUse, services: [.standard]),
        Feature(key: "geofence", requires: .whenInUse, services: [.regionMonitoring]),
        Feature(key: "trips", requires: .always, services: [.standard]),
        Feature(key: "precise", requires: .whenInUse, services: [.standard], accuracy: .full),
        Feature(key: "push", requires: .always, services: [.locationPush]),
    ]
    static let androidReasons: Set<GateReason> = [
        .authorized, .locationServicesDisabled, .denied, .awaitingResponse, .notDetermined, .missingUsageDescription,
        .needsAlways, .reducedAccuracy, .serviceUnavailable, .blocked,
    ]

    @Test("The mapped status is one the gate table knows, and every decision is one of Android's rows")
    func mappedStatus() async {
        await propertyCheck(count: 1000, input: scenarioInput) { numbers in
            let scenario = AndroidScenario(numbers)
            _ = fold(scenario.start, scenario.events) { _, event, transition in
                let state = transition.state
                #expect(state.family == .android)
                #expect(state.status != .restricted && !state.provisional && !state.temporary, "\(event)")
                // The mapping: a grant is authorized, none is denied exactly when denied or blocked.
                switch state.android.foreground {
                case .none:
                    #expect(state.authorization == ((state.android.foregroundDenials > 0 || state.android.foregroundBlocked) ? .denied : .notDetermined))
                case .approximate, .precise:
                    #expect(state.authorization.rank >= Authorization.authorizedWhenInUse.rank)
                    #expect(state.effectiveAccuracy == (state.android.foreground == .precise ? .full : .reduced))
                }
                if let prompt = state.pendingPrompt { #expect(prompt.isAndroid, "\(prompt)") }
                for feature in Self.features {
                    let decision = state.decide(feature, version: 1)
                    #expect(Self.androidReasons.contains(decision.reason), "\(decision.reason) after \(event)")
                    #expect(decision.enabled == (decision.reason == .authorized))
                }
            }
        }
    }

    @Test("permissionsObserved alone converges to the device's truth")
    func observationsConverge() async {
        await propertyCheck(count: 1000, input: scenarioInput) { numbers in
            let scenario = AndroidScenario(numbers)
            let state = fold(scenario.start, scenario.events)
            for granted in AndroidScenario.sets {
                var device = state
                let report = LocationEvent.permissionsObserved(granted: granted, locationEnabled: true)
                _ = try? device.apply(report)
                let expected: ForegroundGrant = granted.contains(.fine) ? .precise : (granted.contains(.coarse) ? .approximate : .none)
                #expect(device.android.foreground == expected)
                if expected != .none && device.context.androidAPILevel >= 29 {
                    #expect(device.android.background == granted.contains(.background))
                }
                #expect(device.locationServicesEnabled)
                var again = device
                #expect((try? again.apply(report)) == [.noEffect(.confirmed)], "\(granted)")
            }
        }
    }

    @Test("A blocked group is never prompted")
    func blockedNeverPrompted() async {
        await propertyCheck(count: 1000, input: scenarioInput) { numbers in
            let scenario = AndroidScenario(numbers)
            _ = fold(scenario.start, scenario.events) { before, event, transition in
                guard case .permissionsRequested(let requested) = event else { return }
                // What Android asks for: the undeclared ones drop out first.
                let asked = requested.intersection(before.context.declaredAndroidPermissions)
                let prompts = transition.effects.compactMap { effect -> Prompt? in
                    if case .promptShown(let prompt) = effect { return prompt }
                    return nil
                }
                if before.android.foregroundBlocked && !asked.isDisjoint(with: [.coarse, .fine]) {
                    #expect(prompts.isEmpty, "\(event) prompted \(prompts) while the foreground group is blocked")
                }
                if before.android.backgroundBlocked && asked == [.background] {
                    #expect(prompts.isEmpty, "\(event) prompted \(prompts) while the background group is blocked")
                }
                // D11: a blocked precise is never asked for.
                if before.android.preciseBlocked && before.android.foreground == .approximate && asked.contains(.fine) {
                    #expect(prompts.isEmpty, "\(event) prompted \(prompts) while precise is blocked")
                }
            }
        }
    }

    @Test("A dismissal never changes denials, blocks or grants, and only ends the prompt")
    func dismissalChangesNothing() async {
        await propertyCheck(count: 1000, input: scenarioInput) { numbers in
            let scenario = AndroidScenario(numbers)
            _ = fold(scenario.start, scenario.events) { before, event, transition in
                let dismissed = transition.effects.contains { effect in
                    if case .answerInferred(_, .dismissed) = effect { return true }
                    return false
                }
                guard dismissed else { return }
                #expect(transition.effects.count == 1, "\(transition.effects)")
                var expected = before
                expected.pendingPrompt = nil
                expected.android.pendingRequest = []
                #expect(transition.state == expected, "\(event)")
            }
        }
    }

    @Test("Gate advice never sends a device to Settings while a dialog would still appear")
    func settingsOnlyWhenBlocked() async {
        await propertyCheck(count: 1000, input: scenarioInput) { numbers in
            let scenario = AndroidScenario(numbers)
            _ = fold(scenario.start, scenario.events) { _, event, transition in
                let state = transition.state
                for feature in Self.features {
                    let decision = state.decide(feature, version: 1)
                    guard decision.action == .openSettings else { continue }
                    // The request the advice replaces would be answered at once, with nothing shown.
                    let asked: Set<AndroidPermission> = decision.reason == .reducedAccuracy ? [.coarse, .fine]
                        : (state.android.foreground == .none ? [.coarse, .fine] : [.background])
                    var probe = state
                    probe.pendingPrompt = nil
                    let effects = (try? probe.apply(.permissionsRequested(asked))) ?? []
                    #expect(!effects.contains { if case .promptShown = $0 { true } else { false } }, "\(decision) after \(event)")
                }
            }
        }
    }

    @Test("I1 a reinstall returns Android's permissions to the start, D1's grants aside")
    func reinstallStarts() async {
        await propertyCheck(count: 500, input: scenarioInput) { numbers in
            let scenario = AndroidScenario(numbers)
            _ = fold(scenario.start, scenario.events) { _, event, transition in
                guard transition.effects.first == .reset(.reinstalled) else { return }
                let android = transition.state.android
                #expect(android.foregroundDenials == 0 && android.backgroundDenials == 0 && android.preciseDenials == 0, "\(event)")
                #expect(!android.foregroundBlocked && !android.backgroundBlocked && !android.preciseBlocked)
                #expect(transition.state.pendingPrompt == nil)
            }
        }
    }
}
