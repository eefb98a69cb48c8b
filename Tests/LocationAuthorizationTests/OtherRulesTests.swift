import Testing

@testable import LocationAuthorization

@Suite("Other events: E1, S1, T1-T2, G1-G2, O1, C1, M1", .timeLimit(.minutes(1)))
struct OtherRulesTests {
    @Test("E1 an Always event in Provisional Always shows the second prompt once")
    func e1Provisional() {
        var state = provisionalDevice()
        #expect(state.accept(.alwaysEventOccurred(.visits)) == [.promptShown(.alwaysSecond)])
        #expect(state.accept(.alwaysEventOccurred(.visits)) == [.eventDelivered(false)])
    }

    @Test("E1 an Always event is delivered in permanent Always and dropped otherwise")
    func e1Delivery() {
        var permanent = whenInUseDevice()
        permanent.accept([requestAlways, respond(.changeToAlwaysAllow)])
        #expect(permanent.accept(.alwaysEventOccurred(.locationPush)) == [.eventDelivered(true)])
        var whenInUse = whenInUseDevice()
        #expect(whenInUse.accept(.alwaysEventOccurred(.significantChange)) == [.eventDelivered(false)])
        var fresh = makeDevice()
        #expect(fresh.accept(.alwaysEventOccurred(.regionMonitoring)) == [.eventDelivered(false)])
    }

    @Test("S1 leaving use ends Allow Once, resets the escalation and ends temporary full accuracy")
    func s1() {
        var state = makeDevice()
        state.accept([requestAlways, respond(.allowOnce)])
        #expect(state.alwaysPromptUsed && state.temporary)
        // The location indicator keeps the app in use.
        #expect(state.accept(.appStateChanged(.background, backgroundIndicator: true)).isEmpty)
        #expect(state.temporary)
        #expect(state.accept(.appStateChanged(.background, backgroundIndicator: false)) == [.statusChanged(from: .authorizedWhenInUse, to: .notDetermined)])
        #expect(!state.temporary && !state.alwaysPromptUsed && state.authorization == .notDetermined)
        state.accept(.appStateChanged(.foreground, backgroundIndicator: false))
        #expect(state.accept(requestAlways) == [.promptShown(.alwaysFirst)])
    }

    @Test("S1 temporary full accuracy ends; a pending prompt stays; a permanent grant stays")
    func s1Accuracy() {
        var state = PromptRulesTests.pending(.fullAccuracy)
        state.accept(respond(.allowFullAccuracy))
        state.accept(requestAlways)
        #expect(state.accept(.appStateChanged(.terminated, backgroundIndicator: false)) == [.accuracyChanged(from: .full, to: .reduced)])
        #expect(state.pendingPrompt == .alwaysUpgrade)
        #expect(state.status == .authorizedWhenInUse)
    }

    @Test("S1 never applies on macOS, where the app is always in use")
    func s1macOS() {
        var mac = makeDevice(.macOS, "14.0")
        mac.accept([requestWhenInUse, respond(.allowWhileUsing)])
        #expect(mac.accept(.appStateChanged(.terminated, backgroundIndicator: false)).isEmpty)
        #expect(mac.isInUse)
    }

    @Test("T1 Settings authorization: never, ask next time, while using, always")
    func t1() {
        var state = provisionalDevice()
        state.accept(.alwaysEventOccurred(.visits))
        #expect(state.accept(.settingsChanged(authorization: .whileUsing, preciseLocation: nil)) == [.statusChanged(from: .authorizedAlways, to: .authorizedWhenInUse)])
        #expect(!state.provisional && state.pendingPrompt == nil && state.alwaysPromptUsed)
        #expect(state.accept(.settingsChanged(authorization: .always, preciseLocation: nil)) == [.statusChanged(from: .authorizedWhenInUse, to: .authorizedAlways)])
        #expect(!state.provisional)
        state.accept(.settingsChanged(authorization: .never, preciseLocation: nil))
        #expect(state.status == .denied)
        state.accept(.settingsChanged(authorization: .askNextTime, preciseLocation: nil))
        #expect(state.status == .notDetermined && !state.alwaysPromptUsed)
        #expect(state.accept(requestAlways) == [.promptShown(.alwaysFirst)])
    }

    @Test("T1 ends Allow Once; always is rejected on tvOS and visionOS; an empty change is invalid JSON")
    func t1Edges() throws {
        var once = makeDevice()
        once.accept([requestWhenInUse, respond(.allowOnce)])
        once.accept(.settingsChanged(authorization: .whileUsing, preciseLocation: nil))
        #expect(!once.temporary)
        for platform in [Platform.tvOS, .visionOS] {
            var state = makeDevice(platform, "17.0")
            state.expectRejection(.settingsChanged(authorization: .always, preciseLocation: nil), .unsupportedSetting)
        }
        let json = #"{"type":"settingsChanged","data":{}}"#
        #expect(throws: EventValidationError.self) { try EventCoding.decodeEvent(json) }
    }

    @Test("T2 precise location sets accuracy; turning it off ends temporary full accuracy")
    func t2() {
        var state = PromptRulesTests.pending(.fullAccuracy)
        state.accept(respond(.allowFullAccuracy))
        #expect(state.accept(.settingsChanged(authorization: nil, preciseLocation: false)) == [.accuracyChanged(from: .full, to: .reduced)])
        #expect(!state.temporaryFullAccuracy)
        #expect(state.accept(.settingsChanged(authorization: nil, preciseLocation: true)) == [.accuracyChanged(from: .reduced, to: .full)])
    }

    @Test("G1 Location Services off denies without touching the grant, which returns")
    func g1() {
        var state = whenInUseDevice()
        #expect(state.accept(.locationServicesChanged(enabled: false)) == [.statusChanged(from: .authorizedWhenInUse, to: .denied)])
        #expect(state.authorization == .authorizedWhenInUse)
        #expect(state.accept(.locationServicesChanged(enabled: true)) == [.statusChanged(from: .denied, to: .authorizedWhenInUse)])
    }

    @Test("G2 a restriction wins over everything and is undone cleanly")
    func g2() {
        var state = provisionalDevice()
        #expect(state.accept(.restrictionChanged(restricted: true)) == [.statusChanged(from: .authorizedAlways, to: .restricted)])
        state.accept(.locationServicesChanged(enabled: false))
        #expect(state.status == .restricted)
        state.accept(.locationServicesChanged(enabled: true))
        #expect(state.accept(.restrictionChanged(restricted: false)) == [.statusChanged(from: .restricted, to: .authorizedAlways)])
        #expect(state.provisional)
    }

    @Test("O1 a matching observation confirms; a different one reconciles")
    func o1() {
        var state = whenInUseDevice()
        #expect(state.accept(.statusObserved(.authorizedWhenInUse, accuracy: .full)) == [.noEffect(.confirmed)])
        #expect(state.accept(.statusObserved(.authorizedAlways, accuracy: nil)) == [.reconciled(from: .authorizedWhenInUse, to: .authorizedAlways)])
        #expect(!state.provisional)
        #expect(state.accept(.statusObserved(.restricted, accuracy: nil)) == [.reconciled(from: .authorizedAlways, to: .restricted)])
        #expect(state.accept(.statusObserved(.denied, accuracy: nil)) == [.reconciled(from: .restricted, to: .denied)])
        #expect(state.authorization == .denied)
        #expect(state.accept(.statusObserved(.authorizedWhenInUse, accuracy: .reduced)) == [.reconciled(from: .denied, to: .authorizedWhenInUse), .accuracyChanged(from: .full, to: .reduced)])
    }

    @Test("O1 keeps provisional and temporary only where they fit, and clears a pending prompt")
    func o1Flags() throws {
        var provisional = provisionalDevice()
        provisional.accept(.alwaysEventOccurred(.visits))
        provisional.accept(.statusObserved(.authorizedWhenInUse, accuracy: nil))
        #expect(!provisional.provisional && provisional.pendingPrompt == nil)

        var once = makeDevice()
        once.accept([requestWhenInUse, respond(.allowOnce)])
        #expect(once.accept(.statusObserved(.authorizedWhenInUse, accuracy: nil)) == [.noEffect(.confirmed)])
        #expect(once.temporary)
        once.accept(.statusObserved(.authorizedAlways, accuracy: nil))
        #expect(!once.temporary)

        var pending = makeDevice()
        pending.accept(requestWhenInUse)
        pending.accept(.statusObserved(.authorizedWhenInUse, accuracy: nil))
        #expect(pending.pendingPrompt == nil)

        // "authorized" is the deprecated name of authorizedAlways; unknown names are invalid.
        let event = try EventCoding.decodeEvent(#"{"type":"statusObserved","data":{"status":"authorized"}}"#)
        #expect(event == .statusObserved(.authorizedAlways, accuracy: nil))
        #expect(throws: EventValidationError.self) {
            try EventCoding.decodeEvent(#"{"type":"statusObserved","data":{"status":"authorizedSometimes"}}"#)
        }
    }

    @Test("O1 denied with Location Services off keeps the app's grant")
    func o1ServicesOff() {
        var state = whenInUseDevice()
        state.accept(.locationServicesChanged(enabled: false))
        #expect(state.accept(.statusObserved(.denied, accuracy: nil)) == [.noEffect(.confirmed)])
        #expect(state.authorization == .authorizedWhenInUse)
    }

    @Test("C1 context fields left out keep their value; the first report sets the starting accuracy")
    func c1() {
        var state = DeviceState()
        #expect(state.accept(.contextReported(DeviceContext(platform: .iOS, osVersion: OSVersion(17, 4), defaultAccuracyReduced: true))) == [.accuracyChanged(from: .full, to: .reduced)])
        state.accept(.contextReported(DeviceContext(appVersion: "2.0")))
        #expect(state.context.platform == .iOS && state.context.osVersion == OSVersion(17, 4) && state.context.appVersion == "2.0")
        state.accept(.settingsChanged(authorization: nil, preciseLocation: true))
        #expect(state.accept(.contextReported(DeviceContext(defaultAccuracyReduced: true))).isEmpty)
        #expect(state.accuracy == .full)
    }

    @Test("M1 every grant on macOS is permanent Always")
    func m1() {
        var whenInUse = makeDevice(.macOS, "14.0")
        whenInUse.accept([requestWhenInUse, respond(.allowWhileUsing)])
        #expect(whenInUse.status == .authorizedAlways && !whenInUse.provisional)
        var always = makeDevice(.macOS, "14.0")
        always.accept([requestAlways, respond(.allowWhileUsing)])
        #expect(always.status == .authorizedAlways && !always.provisional)
        #expect(always.accept(requestAlways) == [.noEffect(.alreadyAlways)])
        var settings = makeDevice(.macOS, "14.0")
        settings.accept(.settingsChanged(authorization: .whileUsing, preciseLocation: nil))
        #expect(settings.status == .authorizedAlways)
        var observed = makeDevice(.macOS, "14.0")
        observed.accept(.statusObserved(.authorizedWhenInUse, accuracy: nil))
        #expect(observed.status == .authorizedAlways)
    }
}

@Suite("S1: prompts that need a grant end with it", .timeLimit(.minutes(1)))
struct PromptsNeedingAGrantTests {
    @Test("S1 a pending alwaysUpgrade or fullAccuracy ends when the authorization becomes notDetermined, by S1 or by O1")
    func s1EndsPendingEscalation() {
        var lapsed = makeDevice(.iOS, "17.4", purposeKeys: ["Nav"])
        lapsed.accept([requestWhenInUse, respond(.allowOnce), .settingsChanged(authorization: nil, preciseLocation: false)])
        lapsed.accept(.authorizationRequested(.temporaryFullAccuracy("Nav")))
        #expect(lapsed.pendingPrompt == .fullAccuracy)
        lapsed.accept(background)
        #expect(lapsed.authorization == .notDetermined && lapsed.pendingPrompt == nil)
        var observed = whenInUseDevice(.iOS, "17.4")
        observed.accept(requestAlways)
        #expect(observed.pendingPrompt == .alwaysUpgrade)
        observed.accept(.statusObserved(.notDetermined, accuracy: nil))
        #expect(observed.pendingPrompt == nil)
        // A When In Use prompt may still be on screen: it stays.
        var asking = makeDevice(.iOS, "17.4")
        asking.accept([requestWhenInUse, .statusObserved(.notDetermined, accuracy: nil)])
        #expect(asking.pendingPrompt == .whenInUse)
    }
}
