import Foundation
import Testing

@testable import LocationAuthorization

/// D5 and D11: a dialog closed with Back or a tap outside answers every permission denied, but
/// Android records nothing. The `rationale` list tells it from a denial.
@Suite("Android: D5 dismissals and D11 precise", .timeLimit(.minutes(1)))
struct AndroidDismissalTests {
    @Test("D5 a first result with the group out of rationale is a dismissal: one effect, no denial, the dialog still works")
    func d5FirstDismissal() {
        var state = androidDevice(api: 34)
        state.accept(request(foregroundPermissions))
        #expect(state.accept(result([], denied: foregroundPermissions, rationale: [])) == [.answerInferred(prompt: .foreground, choice: .dismissed)])
        #expect(state.pendingPrompt == nil && state.android.foregroundDenials == 0 && state.status == .notDetermined)
        // A real denial next puts the group in rationale: the first denial, no block.
        state.accept(request(foregroundPermissions))
        #expect(state.accept(result([], denied: foregroundPermissions, rationale: foregroundPermissions)) == [
            .answerInferred(prompt: .foreground, choice: .deny), .reconciled(from: .notDetermined, to: .denied),
        ])
        #expect(state.android.foregroundDenials == 1 && !state.android.foregroundBlocked)
        let gate = state.decide(Feature(key: "nearby", requires: .whenInUse, services: [.standard]), version: 1)
        #expect(gate.reason == .denied && gate.action == .requestForeground)
    }

    @Test("D5 on API 30+ after one denial, a dismissal leaves the group in rationale and a denial takes it out and blocks")
    func d5SecondDialog() {
        var state = androidDevice(api: 34)
        state.accept([request(foregroundPermissions), result([], denied: foregroundPermissions, rationale: foregroundPermissions)])
        state.accept(request(foregroundPermissions))
        #expect(state.accept(result([], denied: foregroundPermissions, rationale: foregroundPermissions)) == [
            .answerInferred(prompt: .foreground, choice: .dismissed),
        ])
        #expect(state.android.foregroundDenials == 1 && !state.android.foregroundBlocked)
        #expect(state.accept(request(foregroundPermissions)) == [.promptShown(.foreground)])
        state.accept(result([], denied: foregroundPermissions, rationale: []))
        #expect(state.android.foregroundBlocked)
        let gate = state.decide(Feature(key: "nearby", requires: .whenInUse, services: [.standard]), version: 1)
        #expect(gate.reason == .blocked && gate.action == .openSettings)
    }

    @Test("D5 without a rationale list a result that grants nothing is a denial; below API 30 a denial after a denial is told by rationale")
    func d5WithoutRationale() {
        var state = androidDevice(api: 34)
        state.accept([request(foregroundPermissions), result([], denied: foregroundPermissions)])
        #expect(state.android.foregroundDenials == 1)
        var pie = androidDevice(api: 28)
        pie.accept([request(foregroundPermissions), result([], denied: foregroundPermissions, rationale: [])])
        #expect(pie.android.foregroundDenials == 0, "a first result without the group in rationale is a dismissal")
        pie.accept([request(foregroundPermissions), result([], denied: foregroundPermissions, rationale: foregroundPermissions)])
        pie.accept([request(foregroundPermissions), result([], denied: foregroundPermissions, rationale: foregroundPermissions)])
        #expect(pie.android.foregroundDenials == 2 && !pie.android.foregroundBlocked)
        pie.accept([request(foregroundPermissions), result([], denied: foregroundPermissions, rationale: [])])
        #expect(pie.android.foregroundBlocked, "don't ask again was ticked")
    }

    @Test("D5 the API 29 background dialog can be dismissed; the Settings page cannot")
    func d5Background() {
        var q = androidDevice(api: 29)
        q.accept([request(foregroundPermissions), result(foregroundPermissions), request([.background])])
        #expect(q.accept(result(foregroundPermissions, denied: [.background], rationale: [])) == [
            .answerInferred(prompt: .backgroundDialog, choice: .dismissed),
        ])
        #expect(q.android.backgroundDenials == 0 && q.status == .authorizedWhenInUse)
        var page = androidDevice(api: 34)
        page.accept([request(foregroundPermissions), result(foregroundPermissions), request([.background])])
        #expect(page.accept(result(foregroundPermissions, denied: [.background], rationale: [])).first == .answerInferred(prompt: .backgroundSettings, choice: .allowWhileUsing))
        #expect(page.android.backgroundDenials == 1)
    }

    @Test("D11 keepApproximate is a precise denial, the second blocks precise: requests return at once and the gate says openSettings")
    func d11Block() {
        let precise = Feature(key: "precise", requires: .whenInUse, services: [.standard], accuracy: .full)
        var state = androidDevice(api: 34)
        state.accept([request(foregroundPermissions), result([.coarse], denied: [.fine], rationale: [.fine])])
        #expect(state.android.preciseDenials == 0, "choosing approximate in the foreground dialog is no precise denial")
        #expect(state.decide(precise, version: 1).action == .requestPrecise)
        state.accept(request(foregroundPermissions))
        #expect(state.pendingPrompt == .precise)
        // Dismissed: fine stays out of rationale on a first precise dialog.
        #expect(state.accept(result([.coarse], denied: [.fine], rationale: [])) == [.answerInferred(prompt: .precise, choice: .dismissed)])
        #expect(state.android.preciseDenials == 0)
        state.accept(request(foregroundPermissions))
        #expect(state.accept(result([.coarse], denied: [.fine], rationale: [.fine])) == [
            .answerInferred(prompt: .precise, choice: .keepApproximate), .reconciled(from: .authorizedWhenInUse, to: .authorizedWhenInUse),
        ])
        #expect(state.android.preciseDenials == 1 && !state.android.preciseBlocked)
        state.accept(request(foregroundPermissions))
        state.accept(result([.coarse], denied: [.fine], rationale: []))
        #expect(state.android.preciseDenials == 2 && state.android.preciseBlocked)
        #expect(state.accept(request(foregroundPermissions)) == [.noEffect(.blocked)])
        #expect(state.accept(request([.fine])) == [.noEffect(.blocked)])
        let gate = state.decide(precise, version: 1)
        #expect(gate.reason == .reducedAccuracy && gate.action == .openSettings)
        // Settings' precise switch turned on clears precise's denials and block.
        state.accept(.settingsChanged(authorization: nil, preciseLocation: true))
        #expect(state.android.preciseDenials == 0 && !state.android.preciseBlocked && state.decide(precise, version: 1).enabled)
    }

    @Test("D11 Settings' precise switch turned off is a precise denial; askEveryTime and a reset clear them; none below targetSdk 31")
    func d11Settings() {
        var state = androidDevice(api: 34)
        state.accept([request(foregroundPermissions), result(foregroundPermissions)])
        state.accept(.settingsChanged(authorization: nil, preciseLocation: false))
        #expect(state.android.preciseDenials == 1)
        state.accept([.settingsChanged(authorization: nil, preciseLocation: true), .settingsChanged(authorization: nil, preciseLocation: false)])
        #expect(state.android.preciseDenials == 1)
        state.accept([request(foregroundPermissions), result([.coarse], denied: [.fine])])
        #expect(state.android.preciseBlocked)
        var reset = state
        reset.accept(.permissionsReset(.unusedApp))
        #expect(reset.android.preciseDenials == 0 && !reset.android.preciseBlocked)
        state.accept(.settingsChanged(authorization: .askEveryTime, preciseLocation: nil))
        #expect(state.android.preciseDenials == 0 && !state.android.preciseBlocked)
        var old = androidDevice(api: 34, target: 30)
        old.accept([request(foregroundPermissions), result(foregroundPermissions), .settingsChanged(authorization: nil, preciseLocation: false)])
        #expect(old.android.preciseDenials == 0, "precise has denials of its own only from targetSdk 31")
    }

    @Test("D11 the stored forms keep precise's denials and block, and read states stored before them")
    func d11Stored() throws {
        var state = androidDevice(api: 34)
        state.accept([request(foregroundPermissions), result([.coarse], denied: [.fine]), request(foregroundPermissions), result([.coarse], denied: [.fine])])
        state.accept([request(foregroundPermissions), result([.coarse], denied: [.fine])])
        #expect(state.android.preciseBlocked)
        #expect(DeviceState(storedJSON: state.storedJSON) == state)
        let old = state.storedJSON.replacingOccurrences(of: #","precise":2"#, with: "").replacingOccurrences(of: #","precise":true"#, with: "")
        let read = try #require(DeviceState(storedJSON: old))
        #expect(read.android.preciseDenials == 0 && !read.android.preciseBlocked)
    }
}
