import Testing

@testable import LocationAuthorization

@Suite("Requests: A1-A12, K1-K3", .timeLimit(.minutes(1)))
struct RequestRulesTests {
    @Test("A1 whenInUse while notDetermined shows the whenInUse prompt")
    func a1() {
        var state = makeDevice()
        #expect(state.accept(requestWhenInUse) == [.promptShown(.whenInUse)])
        #expect(state.pendingPrompt == .whenInUse)
        #expect(state.status == .notDetermined)
    }

    @Test("A2 whenInUse once determined has no effect", arguments: [true, false])
    func a2(always: Bool) {
        var state = always ? provisionalDevice() : whenInUseDevice()
        #expect(state.accept(requestWhenInUse) == [.noEffect(.alreadyDetermined)])
    }

    @Test("A3 always while notDetermined on iOS 13.4+ shows alwaysFirst and spends the escalation")
    func a3() {
        for os in [nil, "13.4", "17.4", "26.0"] {
            var state = makeDevice(.iOS, os)
            #expect(state.accept(requestAlways) == [.promptShown(.alwaysFirst)])
            #expect(state.alwaysPromptUsed)
        }
        var watch = makeDevice(.watchOS, "10.0")
        #expect(watch.accept(requestAlways) == [.promptShown(.alwaysFirst)])
    }

    @Test("A4 always from When In Use shows the upgrade prompt at once, once")
    func a4() {
        var state = whenInUseDevice(.iOS, "17.0")
        #expect(state.accept(requestAlways) == [.promptShown(.alwaysUpgrade)])
        #expect(state.alwaysPromptUsed)
        var catalyst = whenInUseDevice(.macCatalyst, "14.0")
        #expect(catalyst.accept(requestAlways) == [.promptShown(.alwaysUpgrade)])
        var legacy = whenInUseDevice(.iOS, "12.4")
        #expect(legacy.accept(requestAlways) == [.promptShown(.alwaysUpgrade)])
    }

    @Test("A5 always under Allow Once has no effect")
    func a5() {
        var state = makeDevice()
        state.accept([requestWhenInUse, respond(.allowOnce)])
        #expect(state.accept(requestAlways) == [.noEffect(.temporaryAuthorization)])
        #expect(!state.alwaysPromptUsed)
    }

    @Test("A6 always once Always or once the escalation is spent has no effect")
    func a6() {
        var always = provisionalDevice()
        #expect(always.accept(requestAlways) == [.noEffect(.alreadyAlways)])
        var declined = whenInUseDevice()
        declined.accept([requestAlways, respond(.keepOnlyWhileUsing)])
        #expect(declined.accept(requestAlways) == [.noEffect(.alwaysAlreadyRequested)])
        // 003: a second escalation shows nothing even much later.
        declined.accept(.appStateChanged(.background, backgroundIndicator: false))
        declined.accept(.appStateChanged(.foreground, backgroundIndicator: false))
        #expect(declined.accept(requestAlways) == [.noEffect(.alwaysAlreadyRequested)])
    }

    @Test("A7 any request while denied or restricted has no effect")
    func a7() {
        var denied = makeDevice()
        denied.accept([requestWhenInUse, respond(.dontAllow)])
        for request in [requestWhenInUse, requestAlways, .authorizationRequested(.temporaryFullAccuracy("Nav"))] {
            #expect(denied.accept(request) == [.noEffect(.denied)])
        }
        var restricted = whenInUseDevice()
        restricted.accept(.restrictionChanged(restricted: true))
        for request in [requestWhenInUse, requestAlways, .authorizationRequested(.temporaryFullAccuracy("Nav"))] {
            #expect(restricted.accept(request) == [.noEffect(.restricted)])
        }
        var servicesOff = makeDevice()
        servicesOff.accept(.locationServicesChanged(enabled: false))
        #expect(servicesOff.accept(requestWhenInUse) == [.noEffect(.denied)])
    }

    @Test("A request while a prompt is pending has no effect")
    func promptPending() {
        var state = makeDevice()
        state.accept(requestWhenInUse)
        #expect(state.accept(requestAlways) == [.noEffect(.promptPending)])
        #expect(state.accept(requestWhenInUse) == [.noEffect(.promptPending)])
        #expect(state.pendingPrompt == .whenInUse)
        #expect(!state.alwaysPromptUsed)
    }

    @Test("A8 K1 a When In Use request without its key fails and changes nothing")
    func a8k1() {
        var state = makeDevice(.iOS, "17.0", keys: [UsageDescriptionKey.alwaysAndWhenInUse])
        let before = state
        #expect(state.accept(requestWhenInUse) == [.failed(.missingUsageDescription, keys: [UsageDescriptionKey.whenInUse])])
        #expect(state == before)
        // macOS accepts either the legacy key or the When In Use key.
        var mac = makeDevice(.macOS, "14.0", keys: [UsageDescriptionKey.legacyMac])
        #expect(mac.accept(requestWhenInUse) == [.promptShown(.whenInUse)])
        var bareMac = makeDevice(.macOS, "14.0", keys: [])
        #expect(bareMac.accept(requestWhenInUse) == [.failed(.missingUsageDescription, keys: [UsageDescriptionKey.whenInUse])])
    }

    @Test("A8 K2 an Always request needs the When In Use key and one Always key on iOS 11+")
    func a8k2() {
        var noAlways = makeDevice(.iOS, "17.0", keys: allKeysButAlways)
        #expect(noAlways.accept(requestAlways) == [.failed(.missingUsageDescription, keys: [UsageDescriptionKey.alwaysAndWhenInUse])])
        #expect(!noAlways.alwaysPromptUsed)
        var noKeys = makeDevice(.iOS, "17.0", keys: [])
        #expect(noKeys.accept(requestAlways) == [.failed(.missingUsageDescription, keys: [UsageDescriptionKey.whenInUse, UsageDescriptionKey.alwaysAndWhenInUse])])
        // Either Always key will do (000 vs 003).
        var old = makeDevice(.iOS, "17.0", keys: [UsageDescriptionKey.whenInUse, UsageDescriptionKey.always])
        #expect(old.accept(requestAlways) == [.promptShown(.alwaysFirst)])
        // Below iOS 11, NSLocationAlwaysUsageDescription alone.
        var ios10 = makeDevice(.iOS, "10.3", keys: [UsageDescriptionKey.whenInUse, UsageDescriptionKey.alwaysAndWhenInUse])
        #expect(ios10.accept(requestAlways) == [.failed(.missingUsageDescription, keys: [UsageDescriptionKey.always])])
        var ios10ok = makeDevice(.iOS, "10.3", keys: [UsageDescriptionKey.always])
        #expect(ios10ok.accept(requestAlways) == [.promptShown(.legacyAlways)])
        // macOS: as K1.
        var mac = makeDevice(.macOS, "14.0", keys: [UsageDescriptionKey.legacyMac])
        #expect(mac.accept(requestAlways) == [.promptShown(.alwaysFirst)])
    }

    @Test("A8 key checks come before A7")
    func a8BeforeA7() {
        var state = makeDevice(.iOS, "17.0", keys: [UsageDescriptionKey.whenInUse])
        state.accept([requestWhenInUse, respond(.dontAllow)])
        #expect(state.accept(requestAlways) == [.failed(.missingUsageDescription, keys: [UsageDescriptionKey.alwaysAndWhenInUse])])
    }

    @Test("A9 visionOS handles always as whenInUse; tvOS rejects it")
    func a9() {
        var vision = makeDevice(.visionOS, "2.0")
        #expect(vision.accept(requestAlways) == [.promptShown(.whenInUse)])
        #expect(!vision.alwaysPromptUsed)
        var tv = makeDevice(.tvOS, "17.0")
        tv.expectRejection(requestAlways, .unsupportedRequest)
        #expect(tv.accept(requestWhenInUse) == [.promptShown(.whenInUse)])
    }

    @Test("A10 iOS 11-12 always shows the three-option legacy prompt, below 11 two options")
    func a10() {
        var ios12 = makeDevice(.iOS, "12.4")
        #expect(ios12.accept(requestAlways) == [.promptShown(.legacyAlways)])
        #expect(ios12.alwaysPromptUsed)
        #expect(Prompt.legacyAlways.offeredChoices(in: ios12.context) == [.allowAlways, .allowWhileUsing, .dontAllow])
        var ipad11 = makeDevice(.iPadOS, "11.0")
        #expect(ipad11.accept(requestAlways) == [.promptShown(.legacyAlways)])
        let ios10 = makeDevice(.iOS, "10.3")
        #expect(Prompt.legacyAlways.offeredChoices(in: ios10.context) == [.allowAlways, .dontAllow])
        // Before 13 no prompt offers Allow Once.
        #expect(!Prompt.whenInUse.offeredChoices(in: ios12.context).contains(.allowOnce))
        // OS thresholds apply to iOS and iPadOS only: watchOS 6 is current behaviour.
        var watch = makeDevice(.watchOS, "6.0")
        #expect(watch.accept(requestAlways) == [.promptShown(.alwaysFirst)])
    }

    @Test("A11 iOS 13.0-13.3 escalates silently to Provisional Always")
    func a11() {
        for os in ["13.0", "13.3", "13.3.1"] {
            var state = whenInUseDevice(.iOS, os)
            #expect(state.accept(requestAlways) == [.statusChanged(from: .authorizedWhenInUse, to: .authorizedAlways)])
            #expect(state.provisional)
            #expect(state.alwaysPromptUsed)
            #expect(state.pendingPrompt == nil)
        }
        var ios134 = whenInUseDevice(.iOS, "13.4")
        #expect(ios134.accept(requestAlways) == [.promptShown(.alwaysUpgrade)])
    }

    @Test("A12 K3 temporary full accuracy: purpose key, then A7, pending, notDetermined, full, in use")
    func a12k3() {
        let request = LocationEvent.authorizationRequested(.temporaryFullAccuracy("Navigation"))
        var undeclared = makeDevice(.iOS, "17.0", purposeKeys: ["Other"])
        undeclared.accept([requestWhenInUse, respond(.dontAllow)])
        #expect(undeclared.accept(request) == [.failed(.missingPurposeKey, keys: ["Navigation"])])

        var fresh = makeDevice(.iOS, "17.0", purposeKeys: ["Navigation"])
        #expect(fresh.accept(request) == [.noEffect(.notAuthorized)])

        var full = whenInUseDevice()
        #expect(full.accept(request) == [.noEffect(.alreadyFullAccuracy)])

        var reduced = whenInUseDevice()
        reduced.accept(.settingsChanged(authorization: nil, preciseLocation: false))
        reduced.accept(.appStateChanged(.background, backgroundIndicator: false))
        #expect(reduced.accept(request) == [.noEffect(.notInUse)])
        reduced.accept(.appStateChanged(.foreground, backgroundIndicator: false))
        #expect(reduced.accept(request) == [.promptShown(.fullAccuracy)])
        #expect(reduced.accept(request) == [.noEffect(.promptPending)])
    }
}
