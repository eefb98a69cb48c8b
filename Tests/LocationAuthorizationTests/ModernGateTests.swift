import Testing

@testable import LocationAuthorization

@Suite("Gate decisions for modern features (SPEC §11)", .timeLimit(.minutes(1)))
struct ModernGateTests {
    let arrival = Feature(key: "arrival", requires: .always, services: [.regionMonitoring], delivery: .modern)
    let nearby = Feature(key: "nearby", requires: .whenInUse, services: [.standard], delivery: .modern)
    let tracker = Feature(key: "tracker", requires: .whenInUse, services: [.standard], delivery: .modern, background: true)
    let classicArrival = Feature(key: "classic-arrival", requires: .always, services: [.regionMonitoring])

    func expect(_ decision: GateDecision, _ reason: GateReason, _ action: GateAction, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(decision.enabled == (reason == .authorized), sourceLocation: sourceLocation)
        #expect(decision.reason == reason, sourceLocation: sourceLocation)
        #expect(decision.action == action, sourceLocation: sourceLocation)
    }

    /// A device in permanent Always, on iOS 18.
    func alwaysDevice() -> DeviceState {
        var state = whenInUseDevice(.iOS, "18.0")
        state.accept([requestAlways, respond(.changeToAlwaysAllow)])
        return state
    }

    @Test("background defaults to true for Always features; delivery to locationManager")
    func defaults() {
        #expect(arrival.background && !nearby.background && tracker.background)
        #expect(classicArrival.delivery == .locationManager)
    }

    @Test("Always without an always session: alwaysSessionRequired for modern features, enabled for the delegate's")
    func alwaysSessionRequired() {
        var state = alwaysDevice()
        expect(state.decide(arrival, version: 1), .alwaysSessionRequired, .startAlwaysSession)
        expect(state.decide(classicArrival, version: 1), .authorized, .none)
        state.accept(startSession("nav", .always))
        expect(state.decide(arrival, version: 1), .authorized, .none)
        // Resumable after a termination: still in force until the relaunch window closes (V1).
        state.accept(terminated)
        expect(state.decide(arrival, version: 1), .authorized, .none)
        state.accept(foreground)
        expect(state.decide(arrival, version: 1), .alwaysSessionRequired, .startAlwaysSession)
    }

    @Test("requireExplicitServiceSession without a session requiring authorization: serviceSessionRequired")
    func explicitSession() {
        var state = whenInUseDevice(.iOS, "18.0")
        state.accept(.contextReported(DeviceContext(requireExplicitServiceSession: true)))
        expect(state.decide(nearby, version: 1), .serviceSessionRequired, .startServiceSession)
        state.accept(startSession("idle", .none))
        expect(state.decide(nearby, version: 1), .serviceSessionRequired, .startServiceSession)
        state.accept(startSession("nav", .whenInUse))
        expect(state.decide(nearby, version: 1), .authorized, .none)
    }

    @Test("Background locations on When In Use need a background activity, or the background mode")
    func insufficientlyInUse() {
        var state = whenInUseDevice(.iOS, "18.0")
        expect(state.decide(nearby, version: 1), .authorized, .none)
        expect(state.decide(tracker, version: 1), .insufficientlyInUse, .startBackgroundActivity)
        state.accept(.backgroundActivityChanged(active: true))
        expect(state.decide(tracker, version: 1), .authorized, .none)
        var noMode = whenInUseDevice(.iOS, "18.0")
        noMode.accept(.contextReported(DeviceContext(backgroundLocationMode: false)))
        let decision = noMode.decide(tracker, version: 1)
        expect(decision, .insufficientlyInUse, .fixBackgroundModes)
        #expect(decision.missingKeys == ["UIBackgroundModes"])
        // Always with an always session serves the background too.
        var always = alwaysDevice()
        expect(always.decide(tracker, version: 1), .insufficientlyInUse, .startBackgroundActivity)
        always.accept(startSession("nav", .always))
        expect(always.decide(tracker, version: 1), .authorized, .none)
    }

    @Test("A monitor over its condition limit disables region monitoring")
    func monitorLimit() {
        var state = alwaysDevice()
        state.accept(startSession("nav", .always))
        state.accept(diagnostic(.monitor, [.conditionLimitExceeded]))
        expect(state.decide(arrival, version: 1), .monitorLimitExceeded, .none)
        expect(state.decide(nearby, version: 1), .authorized, .none)
        state.accept(diagnostic(.monitor))
        expect(state.decide(arrival, version: 1), .authorized, .none)
    }

    @Test("Before iOS 18 and on macOS the rows do not apply; the status table and a pending prompt come first")
    func scope() {
        var old = whenInUseDevice(.iOS, "17.4")
        old.accept([requestAlways, respond(.changeToAlwaysAllow)])
        expect(old.decide(arrival, version: 1), .authorized, .none)
        var mac = makeDevice(.macOS, "15.0")
        mac.accept([requestWhenInUse, respond(.allowWhileUsing)])
        expect(mac.decide(arrival, version: 1), .authorized, .none)
        var fresh = makeDevice(.iOS, "18.0")
        expect(fresh.decide(arrival, version: 0), .notDetermined, .requestWhenInUse)
        fresh.accept(startSession("nav", .always))
        expect(fresh.decide(arrival, version: 1), .awaitingResponse, .none)
        let catalyst = whenInUseDevice(.macCatalyst, "15.0")
        expect(catalyst.decide(arrival, version: 1), .alwaysSessionRequired, .startAlwaysSession)
    }
}
