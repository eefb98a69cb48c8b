import PropertyBased
import Testing

@testable import LocationAuthorization

/// Random sequences of Core Location's classic events mixed with service sessions, app states
/// and relaunches, on iOS 18 and the other platforms with sessions.
struct SessionScenario {
    static let contexts: [DeviceContext] = [
        DeviceContext(platform: .iOS, osVersion: OSVersion(18, 0)),
        DeviceContext(platform: .iPadOS, osVersion: OSVersion(26, 1), temporaryUsagePurposeKeys: ["Nav"], defaultAccuracyReduced: true),
        DeviceContext(platform: .macCatalyst, osVersion: OSVersion(15, 2)),
        DeviceContext(platform: .visionOS, osVersion: OSVersion(2, 0)),
        DeviceContext(platform: .watchOS, osVersion: OSVersion(11, 0), usageDescriptions: [UsageDescriptionKey.whenInUse]),
        DeviceContext(platform: .tvOS, osVersion: OSVersion(18, 0)),
        DeviceContext(platform: .iOS, osVersion: OSVersion(18, 2), usageDescriptions: [], temporaryUsagePurposeKeys: ["Nav"]),
    ]
    static let keys = ["nav", "trip", "log"]

    var context: DeviceContext
    var events: [LocationEvent]

    init(_ numbers: [Int]) {
        var numbers = numbers.makeIterator()
        context = Self.contexts[(numbers.next() ?? 0) % Self.contexts.count]
        events = []
        while let number = numbers.next() {
            events.append(Self.event(number))
        }
    }

    static func event(_ number: Int) -> LocationEvent {
        let pick = number % 1000
        let key = keys[(pick / 7) % keys.count]
        switch pick % 12 {
        case 0, 1:
            let requirement = SessionRequirement.allCases[(pick / 30) % 3]
            return .serviceSessionChanged(.started(key, requirement, fullAccuracyPurposeKey: pick % 4 == 0 ? "Nav" : nil))
        case 2: return .serviceSessionChanged(.invalidated(key))
        case 3: return .appStateChanged(AppState.allCases[(pick / 10) % 3], backgroundIndicator: pick % 3 == 0)
        case 4: return .contextReported(DeviceContext())
        case 5:
            let source = DiagnosticSource.allCases[(pick / 12) % 4]
            let allowed = source.allowedFlags.sorted()
            let flags = Set(allowed.enumerated().filter { (number >> ($0.offset % 20)) & 1 == 1 && $0.offset % 3 == pick % 3 }.map(\.element))
            return .diagnosticObserved(Diagnostic(source: source, session: source == .serviceSession ? key : nil, flags: flags))
        case 6: return .backgroundActivityChanged(active: pick % 3 != 0)
        default: return Scenario.event(number / 12)
        }
    }

    var start: DeviceState {
        var state = DeviceState()
        _ = try? state.apply(.contextReported(context))
        return state
    }
}

/// The classic fields: what a state is to the rules of SPEC §3 without sessions.
struct ClassicFields: Equatable {
    var authorization: Authorization, provisional: Bool, temporary: Bool, alwaysPromptUsed: Bool, pendingPrompt: Prompt?
    var accuracy: Accuracy, temporaryFullAccuracy: Bool, locationServicesEnabled: Bool, restricted: Bool, inUse: Bool

    init(_ state: DeviceState) {
        authorization = state.authorization
        provisional = state.provisional
        temporary = state.temporary
        alwaysPromptUsed = state.alwaysPromptUsed
        pendingPrompt = state.pendingPrompt
        accuracy = state.accuracy
        temporaryFullAccuracy = state.temporaryFullAccuracy
        locationServicesEnabled = state.locationServicesEnabled
        restricted = state.restricted
        inUse = state.inUse
    }
}

@Suite("Service session properties over random sequences", .timeLimit(.minutes(2)))
struct ServiceSessionPropertyTests {
    /// The classic twin of a sequence drops the `serviceSessionChanged` events and, wherever Core Location asked
    /// on a session's behalf (V2), makes the request an app would have made. If sessions reached
    /// a state the classic rules could not, the twin would part from the real device.
    @Test("Sessions never make a state the classic rules could not reach: each prompt of theirs is a request's")
    func sessionsStayClassic() async {
        await propertyCheck(count: 1000, input: scenarioInput) { numbers in
            let scenario = SessionScenario(numbers)
            var twin = scenario.start
            _ = fold(scenario.start, scenario.events) { _, event, transition in
                if case .serviceSessionChanged = event {} else {
                    _ = try? twin.apply(event)
                }
                for prompt in Effect.sessionPrompts(in: transition.effects, of: event.type) {
                    let request: AuthorizationRequest
                    switch prompt {
                    case .whenInUse: request = .whenInUse
                    case .alwaysUpgrade: request = .always
                    case .fullAccuracy: request = .temporaryFullAccuracy("Nav")
                    default:
                        Issue.record("a session showed \(prompt), which no session goal asks for")
                        return
                    }
                    let effects = (try? twin.apply(.authorizationRequested(request))) ?? []
                    #expect(effects.first == .promptShown(prompt), "the request for \(prompt) would have shown \(effects) after \(event)")
                }
                #expect(ClassicFields(transition.state) == ClassicFields(twin), "after \(event)")
                #expect(!transition.state.provisional || transition.state.authorization == .authorizedAlways)
                #expect(!transition.state.temporary || transition.state.authorization == .authorizedWhenInUse)
                #expect(transition.state.sessionState.sessions.count <= ServiceSessionState.maxSessions)
                #expect(transition.state.context.hasServiceSessions || transition.state.sessionState.sessions.isEmpty)
            }
        }
    }

    /// The diagnostics a device would report for a truth: restricted, Location Services off,
    /// the app denied, or none of these (with or without reduced accuracy).
    static let truths: [Set<DiagnosticFlag>] = [
        [.authorizationRestricted], [.authorizationDeniedGlobally, .authorizationDenied], [.authorizationDenied], [],
        [.accuracyLimited], [.insufficientlyInUse, .stationary],
    ]

    @Test("A stream of diagnostics alone converges to the device's truth, as statusObserved does (O1)")
    func diagnosticsConverge() async {
        await propertyCheck(count: 1000, input: scenarioInput) { numbers in
            let scenario = SessionScenario(numbers)
            let state = fold(scenario.start, scenario.events)
            guard state.context.hasDiagnostics(from: .liveUpdates) else { return }
            for flags in Self.truths {
                var device = state
                let report = LocationEvent.diagnosticObserved(Diagnostic(source: .liveUpdates, flags: flags))
                _ = try? device.apply(report)
                if flags.contains(.authorizationRestricted) {
                    #expect(device.status == .restricted)
                } else if flags.contains(.authorizationDeniedGlobally) {
                    #expect(device.status == .denied && !device.locationServicesEnabled)
                } else if flags.contains(.authorizationDenied) {
                    #expect(device.status == .denied && device.authorization == .denied)
                } else {
                    #expect(!device.restricted && device.locationServicesEnabled)
                }
                if flags.contains(.accuracyLimited) { #expect(device.effectiveAccuracy == .reduced) }
                // Once reconciled, the same report confirms: the state has converged.
                var again = device
                let effects = (try? again.apply(report)) ?? []
                #expect(effects == [.noEffect(.confirmed)] || effects == [.noEffect(.deliveryOnly)], "\(flags): \(effects)")
                #expect(ClassicFields(again) == ClassicFields(device))
            }
        }
    }
}
