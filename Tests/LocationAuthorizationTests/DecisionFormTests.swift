import PropertyBased
import Testing

@testable import LocationAuthorization

/// A state's decision form decides as the state does (`DeviceState.decisionForm`): over random
/// sequences of every platform's scenarios, with planted free text (app versions, purpose keys,
/// usage descriptions, session keys, install ids), for features of every kind.
@Suite("Decision forms decide as their states do", .timeLimit(.minutes(2)))
struct DecisionFormTests {
    static let floors: [AppVersion?] = [nil, AppVersion("5.2"), AppVersion("1"), AppVersion("9.10.3.1")]
    static let versions: [String?] = [nil, "5.2", "5.1.9", "5.2-beta", "10", "0.9", "9.10.3.1x", "9.10.3"]

    /// Every shape of feature: tiers, services, accuracy, background, delivery, the kill switch
    /// and the floors.
    static let features: [Feature] = {
        var features: [Feature] = []
        var index = 0
        for requires in [Tier.whenInUse, .always] {
            for services in [[LocationService.standard], [.regionMonitoring], [.significantChange, .visits], [.locationPush], [.heading, .beaconRanging]] {
                for accuracy in [AccuracyNeed.any, .full] {
                    for delivery in [FeatureDelivery.locationManager, .modern] {
                        let floor = floors[index % floors.count]
                        features.append(Feature(
                            key: "f\(index)", requires: requires, services: services, accuracy: accuracy, delivery: delivery,
                            background: index % 3 == 0 ? nil : index % 3 == 1, disabled: index % 17 == 0, minAppVersion: floor))
                        index += 1
                    }
                }
            }
        }
        return features
    }()

    /// Free text an ingest key could plant, as the rules keep it in a state.
    static func planted(_ state: DeviceState, _ number: Int) -> DeviceState {
        var state = state
        state.context.appVersion = versions[number % versions.count]
        state.installID = number % 2 == 0 ? "install-\(number)" : nil
        if number % 5 == 1 { state.context.temporaryUsagePurposeKeys = ["Purpose\(number)", "Nav"] }
        if number % 7 == 2, var keys = state.context.usageDescriptions { keys.insert("NSPlanted\(number)"); state.context.usageDescriptions = keys }
        if number % 3 == 0, let os = state.context.osVersion { state.context.osVersion = OSVersion(os.major, os.minor, number % 9) }
        if let (key, session) = state.sessionState.sessions.first, number % 4 == 3 {
            var renamed = session
            renamed.fullAccuracyPurposeKey = "Planted\(number)"
            state.sessionState.sessions["planted-\(number)"] = renamed
            state.sessionState.sessions[key] = session
        }
        return state
    }

    static func expectSameDecisions(_ state: DeviceState, sourceLocation: SourceLocation = #_sourceLocation) {
        let form = state.decisionForm
        for feature in features {
            let meets = feature.minAppVersion?.isMet(by: state.context.appVersion) ?? false
            let expected = state.decide(feature, version: 7)
            let decided = form.decideForm(feature, meetsAppVersionFloor: meets, version: 7)
            #expect(decided == expected, "\(feature) over \(state)", sourceLocation: sourceLocation)
        }
    }

    @Test("Core Location's classic rules")
    func coreLocation() async {
        await propertyCheck(count: 300, input: scenarioInput) { numbers in
            let scenario = Scenario(numbers)
            var step = 0
            _ = fold(scenario.start, scenario.events) { _, _, transition in
                step += 1
                Self.expectSameDecisions(Self.planted(transition.state, step + numbers.count))
            }
        }
    }

    @Test("Service sessions")
    func serviceSessions() async {
        await propertyCheck(count: 300, input: scenarioInput) { numbers in
            let scenario = SessionScenario(numbers)
            var step = 0
            _ = fold(scenario.start, scenario.events) { _, _, transition in
                step += 1
                Self.expectSameDecisions(Self.planted(transition.state, step + numbers.count))
            }
        }
    }

    @Test("Android, and Android 17's location button")
    func android() async {
        await propertyCheck(count: 300, input: scenarioInput) { numbers in
            var step = 0
            let scenario = AndroidScenario(numbers)
            _ = fold(scenario.start, scenario.events) { _, _, transition in
                step += 1
                Self.expectSameDecisions(Self.planted(transition.state, step))
            }
            let button = ButtonScenario(numbers)
            _ = fold(button.start, button.events) { _, _, transition in
                step += 1
                Self.expectSameDecisions(Self.planted(transition.state, step))
            }
        }
    }

    @Test("States that differ only in planted text have one form")
    func plantedTextCollapses() {
        var state = DeviceState()
        _ = try? state.apply(.contextReported(DeviceContext(platform: .iOS, osVersion: OSVersion(18, 1), appVersion: "1.0")))
        let forms = Set((0..<50).map { Self.planted(state, $0 * 10 + 1).decisionForm })
        #expect(forms.count == 1)
        #expect(state.decisionForm.context.appVersion == nil)
    }
}
