import Testing

@testable import LocationAuthorization

@Suite("Gate decisions: the SPEC §4 table row by row", .timeLimit(.minutes(1)))
struct GateDecisionTests {
    let basic = Feature(key: "nearby", requires: .whenInUse, services: [.standard])
    let arrival = Feature(key: "arrival-lights", requires: .always, services: [.regionMonitoring])
    let background = Feature(key: "trip-log", requires: .always, services: [.standard])
    let precise = Feature(key: "turn-by-turn", requires: .whenInUse, services: [.standard], accuracy: .full)

    func expect(
        _ decision: GateDecision, enabled: Bool, _ reason: GateReason, _ action: GateAction,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(decision.enabled == enabled, sourceLocation: sourceLocation)
        #expect(decision.reason == reason, sourceLocation: sourceLocation)
        #expect(decision.action == action, sourceLocation: sourceLocation)
    }

    @Test("Row restricted: disabled, none")
    func restricted() {
        var state = whenInUseDevice()
        state.accept(.restrictionChanged(restricted: true))
        expect(state.decide(basic, version: 3), enabled: false, .restricted, .none)
    }

    @Test("Row Location Services off: disabled, enableLocationServices")
    func servicesOff() {
        var state = whenInUseDevice()
        state.accept(.locationServicesChanged(enabled: false))
        expect(state.decide(basic, version: 3), enabled: false, .locationServicesDisabled, .enableLocationServices)
    }

    @Test("Row denied: disabled, openSettings")
    func denied() {
        var state = makeDevice()
        state.accept([requestWhenInUse, respond(.dontAllow)])
        expect(state.decide(basic, version: 3), enabled: false, .denied, .openSettings)
    }

    @Test("Row prompt pending, feature not enabled: awaitingResponse")
    func awaiting() {
        var state = makeDevice()
        state.accept(requestWhenInUse)
        expect(state.decide(basic, version: 2), enabled: false, .awaitingResponse, .none)
        // A feature already enabled stays enabled while another prompt is up.
        var upgrading = whenInUseDevice()
        upgrading.accept(requestAlways)
        expect(upgrading.decide(basic, version: 4), enabled: true, .authorized, .none)
        expect(upgrading.decide(background, version: 4), enabled: false, .awaitingResponse, .none)
    }

    @Test("Row notDetermined, K1 fails: fixUsageDescriptions with the missing key")
    func notDeterminedMissingKey() {
        let state = makeDevice(.iOS, "17.0", keys: [])
        let decision = state.decide(basic, version: 1)
        expect(decision, enabled: false, .missingUsageDescription, .fixUsageDescriptions)
        #expect(decision.missingKeys == [UsageDescriptionKey.whenInUse])
    }

    @Test("Row notDetermined: requestWhenInUse, also for an Always feature (003)")
    func notDetermined() {
        let state = DeviceState()
        let decision = state.decide(background, version: 0)
        expect(decision, enabled: false, .notDetermined, .requestWhenInUse)
        #expect(decision.version == 0 && decision.status == .notDetermined && decision.missingKeys == nil)
    }

    @Test("Row authorizedWhenInUse, tier whenInUse: enabled, temporary noted")
    func whenInUseEnabled() {
        var state = makeDevice()
        state.accept([requestWhenInUse, respond(.allowOnce)])
        let decision = state.decide(basic, version: 3)
        expect(decision, enabled: true, .authorized, .none)
        #expect(decision.temporary && decision.requiredTier == .whenInUse)
    }

    @Test("Row authorizedWhenInUse, tier always, macOS or Mac Catalyst: enabled")
    func macEquivalent() {
        let catalyst = whenInUseDevice(.macCatalyst, "14.0")
        expect(catalyst.decide(background, version: 3), enabled: true, .authorized, .none)
        var mac = makeDevice(.macOS, "14.0")
        mac.accept(.statusObserved(.authorizedWhenInUse, accuracy: nil))
        expect(mac.decide(background, version: 2), enabled: true, .authorized, .none)
    }

    @Test("Row authorizedWhenInUse, tier always, tvOS or visionOS: alwaysUnavailable")
    func alwaysUnavailable() {
        for platform in [Platform.tvOS, .visionOS] {
            let state = whenInUseDevice(platform, "17.0")
            expect(state.decide(background, version: 3), enabled: false, .alwaysUnavailable, .none)
        }
    }

    @Test("Row authorizedWhenInUse, tier always, temporary: temporaryAuthorization")
    func temporary() {
        var state = makeDevice()
        state.accept([requestWhenInUse, respond(.allowOnce)])
        expect(state.decide(background, version: 3), enabled: false, .temporaryAuthorization, .none)
    }

    @Test("Row authorizedWhenInUse, tier always, escalation unused, K2 fails: fixUsageDescriptions")
    func alwaysMissingKey() {
        let state = whenInUseDevice(.iOS, "17.0", keys: allKeysButAlways)
        let decision = state.decide(background, version: 3)
        expect(decision, enabled: false, .missingUsageDescription, .fixUsageDescriptions)
        #expect(decision.missingKeys == [UsageDescriptionKey.alwaysAndWhenInUse])
    }

    @Test("Row authorizedWhenInUse, tier always, escalation unused: requestAlways")
    func needsAlways() {
        let state = whenInUseDevice()
        expect(state.decide(background, version: 3), enabled: false, .needsAlways, .requestAlways)
    }

    @Test("Row authorizedWhenInUse, tier always, escalation used: alwaysDeclined, openSettings")
    func alwaysDeclined() {
        var state = whenInUseDevice()
        state.accept([requestAlways, respond(.keepOnlyWhileUsing)])
        expect(state.decide(background, version: 5), enabled: false, .alwaysDeclined, .openSettings)
    }

    @Test("Row authorizedAlways: enabled, provisional noted")
    func always() {
        let state = provisionalDevice()
        let decision = state.decide(arrival, version: 3)
        expect(decision, enabled: true, .authorized, .none)
        #expect(decision.provisional && decision.requiredTier == .always && decision.status == .authorizedAlways)
    }

    @Test("Accuracy: full-accuracy features with reduced accuracy, with and without a purpose key")
    func reducedAccuracy() {
        var state = whenInUseDevice()
        state.accept(.settingsChanged(authorization: nil, preciseLocation: false))
        expect(state.decide(precise, version: 4), enabled: false, .reducedAccuracy, .requestTemporaryFullAccuracy)
        expect(state.decide(basic, version: 4), enabled: true, .authorized, .none)
        let beacons = Feature(key: "beacons", requires: .whenInUse, services: [.beaconRanging])
        expect(state.decide(beacons, version: 4), enabled: false, .reducedAccuracy, .requestTemporaryFullAccuracy)
        var noPurpose = whenInUseDevice()
        noPurpose.accept(.contextReported(DeviceContext(temporaryUsagePurposeKeys: [])))
        noPurpose.accept(.settingsChanged(authorization: nil, preciseLocation: false))
        expect(noPurpose.decide(precise, version: 5), enabled: false, .reducedAccuracy, .openSettings)
        // Temporary full accuracy enables it, and the decision shows the effective accuracy.
        state.accept([.authorizationRequested(.temporaryFullAccuracy("Nav")), respond(.allowFullAccuracy)])
        let decision = state.decide(precise, version: 6)
        expect(decision, enabled: true, .authorized, .none)
        #expect(decision.accuracy == .full)
    }

    @Test("Services the platform lacks decide first")
    func serviceUnavailable() {
        let push = Feature(key: "push", requires: .whenInUse, services: [.locationPush])
        let watch = whenInUseDevice(.watchOS, "10.0")
        expect(watch.decide(arrival, version: 3), enabled: false, .serviceUnavailable, .none)
        expect(watch.decide(push, version: 3), enabled: false, .serviceUnavailable, .none)
        expect(watch.decide(Feature(key: "v", requires: .whenInUse, services: [.visits]), version: 3), enabled: true, .authorized, .none)
        let tv = DeviceState().applying(.contextReported(DeviceContext(platform: .tvOS)))
        expect(tv.decide(Feature(key: "h", requires: .whenInUse, services: [.heading]), version: 1), enabled: false, .serviceUnavailable, .none)
        expect(tv.decide(Feature(key: "g", requires: .whenInUse, services: [.standard, .geocoding]), version: 1), enabled: false, .notDetermined, .requestWhenInUse)
        var denied = makeDevice(.watchOS, "10.0")
        denied.accept([requestWhenInUse, respond(.dontAllow)])
        expect(denied.decide(arrival, version: 3), enabled: false, .serviceUnavailable, .none)
    }

    @Test("Tier: location push, and iOS 12 services that needed Always")
    func tiers() {
        let visits = Feature(key: "visits", requires: .whenInUse, services: [.visits])
        #expect(visits.requiredTier(in: makeDevice(.iOS, "12.4").context) == .always)
        #expect(visits.requiredTier(in: makeDevice(.iOS, "13.0").context) == .whenInUse)
        #expect(visits.requiredTier(in: makeDevice(.watchOS, "5.0").context) == .whenInUse)
        let push = Feature(key: "push", requires: .whenInUse, services: [.locationPush])
        #expect(push.requiredTier(in: DeviceContext()) == .always)
        let old = whenInUseDevice(.iOS, "12.4")
        expect(old.decide(visits, version: 3), enabled: false, .needsAlways, .requestAlways)
    }
}

extension DeviceState {
    /// The state after one more event; test helper for states built inline.
    func applying(_ event: LocationEvent) -> DeviceState {
        (try? reduce(event).state) ?? self
    }
}
