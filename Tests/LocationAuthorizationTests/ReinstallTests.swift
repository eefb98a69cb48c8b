import Testing

@testable import LocationAuthorization

/// I1: a new `installId` on a stream means the app was deleted and installed again, which resets
/// its location permission on both platforms.
@Suite("I1: reinstalls", .timeLimit(.minutes(1)))
struct ReinstallTests {
    static func context(_ platform: Platform, install: String, api: Int? = nil) -> LocationEvent {
        .contextReported(DeviceContext(platform: platform, apiLevel: api, targetSdk: api, installID: install))
    }

    @Test("I1 Android: a new installId clears grants, denials and blocks (precise too); effects reset first, then the status")
    func android() {
        var state = androidDevice(api: 34)
        #expect(state.accept(Self.context(.android, install: "a", api: 34)).isEmpty, "the first installId changes nothing")
        state.accept([request(foregroundPermissions), result([.coarse], denied: [.fine])])
        for _ in 0..<2 { state.accept([request(foregroundPermissions), result([.coarse], denied: [.fine])]) }
        for _ in 0..<2 { state.accept([request([.background]), result([.coarse], denied: [.background])]) }
        #expect(state.android.preciseBlocked && state.android.backgroundBlocked)
        #expect(state.accept(Self.context(.android, install: "a")).isEmpty, "the same installId again changes nothing")
        #expect(state.accept(Self.context(.android, install: "b")) == [
            .reset(.reinstalled), .statusChanged(from: .authorizedWhenInUse, to: .notDetermined), .accuracyChanged(from: .reduced, to: .full),
        ])
        #expect(state.android == AndroidPermissionState() && state.pendingPrompt == nil)
        #expect(state.context.apiLevel == 34 && state.context.installID == nil && state.installID == "b")
        #expect(state.accept(request(foregroundPermissions)) == [.promptShown(.foreground)])
    }

    @Test("I1 Android: D1's install grants come back with a reinstall")
    func androidInstallGrants() {
        var state = androidDevice(api: 22)
        state.accept([Self.context(.android, install: "a"), .permissionsObserved(granted: [], locationEnabled: nil)])
        #expect(state.status == .notDetermined)
        #expect(state.accept(Self.context(.android, install: "b")) == [.reset(.reinstalled), .statusChanged(from: .notDetermined, to: .authorizedAlways)])
    }

    @Test("I1 Apple: notDetermined, the starting accuracy, no prompt used, sessions removed; context and Location Services kept")
    func apple() {
        var state = makeDevice(.iOS, "18.0")
        state.accept(.contextReported(DeviceContext(defaultAccuracyReduced: true, installID: "one")))
        state.accept([requestWhenInUse, respond(.allowWhileUsing), requestAlways, respond(.keepOnlyWhileUsing)])
        state.accept(.serviceSessionChanged(.started("nav", .whenInUse)))
        state.accept([.locationServicesChanged(enabled: false)])
        #expect(state.alwaysPromptUsed && state.sessionState.sessions["nav"] != nil)
        #expect(state.accept(.contextReported(DeviceContext(installID: "two"))) == [
            .reset(.reinstalled), .sessionChanged(session: "nav", active: false),
        ])
        #expect(state.authorization == .notDetermined && !state.alwaysPromptUsed && state.pendingPrompt == nil)
        #expect(state.accuracy == .reduced, "C1's starting accuracy")
        #expect(state.sessionState == ServiceSessionState())
        #expect(!state.locationServicesEnabled && state.context.osVersion == OSVersion("18.0"))
        state.accept(.locationServicesChanged(enabled: true))
        #expect(state.accept(requestWhenInUse) == [.promptShown(.whenInUse)])
    }

    @Test("I1 the status effect follows the reset when the app was authorized; the installId is bounded as appVersion")
    func appleStatus() throws {
        var state = makeDevice(.iOS, "17.0")
        state.accept([.contextReported(DeviceContext(installID: "one")), requestWhenInUse, respond(.allowWhileUsing)])
        #expect(state.accept(.contextReported(DeviceContext(installID: "two"))) == [
            .reset(.reinstalled), .statusChanged(from: .authorizedWhenInUse, to: .notDetermined),
        ])
        // The stored form leaves the install id out (the projection keeps it beside the state).
        var stored = state
        stored.installID = nil
        #expect(DeviceState(storedJSON: state.storedJSON) == stored)
        #expect(!state.storedJSON.contains("two"))
        let long = String(repeating: "x", count: 65)
        #expect(throws: (any Error).self) {
            _ = try EventCoding.decodeEvent(#"{"type":"contextReported","data":{"installId":"\#(long)"}}"#)
        }
    }
}
