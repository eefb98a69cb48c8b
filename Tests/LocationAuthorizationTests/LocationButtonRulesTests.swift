import Testing

@testable import LocationAuthorization

/// Every location permission and the location button, as an Android 17 app that uses it declares.
let buttonManifest: Set<AndroidPermission> = [.coarse, .fine, .background, .foregroundServiceLocation, .locationButton]

/// An Android device at an API level (37 by default: Android 17) whose app declares the location
/// button, and optionally marks FINE `onlyForLocationButton`.
func buttonDevice(api: Int = 37, target: Int? = nil, declared: Set<AndroidPermission> = buttonManifest, fineOnly: Bool? = nil) -> DeviceState {
    var state = DeviceState()
    let context = DeviceContext(
        platform: .android, apiLevel: api, targetSdk: target ?? api, declaredPermissions: declared, fineOnlyForLocationButton: fineOnly)
    do {
        _ = try state.apply(.contextReported(context))
    } catch {
        Issue.record("the Android context was refused: \(error)")
    }
    return state
}

func buttonResult(_ granted: Bool) -> LocationEvent { .locationButtonResult(granted: granted) }
let buttonOpened = LocationEvent.locationButtonSession(.opened)
let buttonClosed = LocationEvent.locationButtonSession(.closed)
let leftForeground = LocationEvent.appStateChanged(.background, backgroundIndicator: false, foregroundService: false)
let backInForeground = LocationEvent.appStateChanged(.foreground, backgroundIndicator: false, foregroundService: false)
let consentDialogAllowed: [Effect] = [.promptShown(.locationButton), .answerInferred(prompt: .locationButton, choice: .allow)]
let consentDialogRefused: [Effect] = [.promptShown(.locationButton), .answerInferred(prompt: .locationButton, choice: .dontAllow)]

extension DeviceState {
    /// A button grant that then lapses: the app leaves the foreground and an observation finds
    /// the grant gone (B6), then the app comes back.
    mutating func grantThroughButtonAndLapse(keeping granted: Set<AndroidPermission> = [], sourceLocation: SourceLocation = #_sourceLocation) {
        accept([buttonResult(true), leftForeground, observed(granted), backInForeground], sourceLocation: sourceLocation)
    }
}

@Suite("Android 17's location button: B1-B8", .timeLimit(.minutes(1)))
struct LocationButtonRulesTests {
    @Test("B1 a session opens and ends (closed, failed with its cause, terminated) and changes no permission; the button needs API 37 and its declarations")
    func b1() {
        var state = buttonDevice()
        #expect(state.accept(buttonOpened) == [.sessionChanged(session: "locationButton", active: true)])
        #expect(state.android.locationButtonSession)
        #expect(state.accept(buttonOpened) == [.noEffect(.unchanged)])
        #expect(state.accept(.locationButtonSession(.failed, cause: "SecurityException")) == [
            .sessionChanged(session: "locationButton", active: false), .failed(.locationButtonError, keys: ["SecurityException"]),
        ])
        #expect(state.accept(.locationButtonSession(.failed)) == [.noEffect(.unchanged), .failed(.locationButtonError, keys: [])])
        #expect(state.accept(buttonClosed) == [.noEffect(.unchanged)])
        #expect(state.android.foreground == .none && state.status == .notDetermined)
        // Closing a session ends no grant.
        state.accept([buttonOpened, buttonResult(true)])
        #expect(state.accept(buttonClosed) == [.sessionChanged(session: "locationButton", active: false)])
        #expect(state.android.foreground == .precise && state.temporary)
        // A terminated app holds no session.
        state.accept(buttonOpened)
        #expect(state.accept(.appStateChanged(.terminated, backgroundIndicator: false, foregroundService: false)) == [
            .sessionChanged(session: "locationButton", active: false),
        ])
        #expect(!state.android.locationButtonSession)

        // Where the button is not available: 422 ruleViolation, nothing changes.
        for (device, name) in [
            (buttonDevice(api: 36), "API 36"), (androidDevice(api: 37), "locationButton not declared (not in the default four)"),
            (buttonDevice(declared: [.coarse, .locationButton]), "fine not declared"),
        ] {
            for event in [buttonOpened, buttonResult(true), buttonResult(false)] {
                var copy = device
                copy.expectRejection(event, .locationButtonUnavailable)
                do {
                    _ = try copy.apply(event)
                } catch {
                    #expect(!error.isValidation, "\(name): a ruleViolation, not a validationFailed")
                }
            }
        }
        // Android types: an Apple device refuses them naming `type`.
        var phone = makeDevice(.iOS, "18.0")
        phone.expectRejection(buttonResult(true), .notOnThisPlatform)
        phone.expectRejection(buttonOpened, .notOnThisPlatform)
    }

    @Test("B2 granted while precise is held: noEffect alreadyGranted")
    func b2() {
        var state = buttonDevice()
        state.accept(buttonResult(true))
        let before = state
        #expect(state.accept(buttonResult(true)) == [.noEffect(.alreadyGranted)])
        #expect(state == before)
        // Precise held persistently (Settings) too.
        var settled = buttonDevice()
        settled.accept(.settingsChanged(authorization: .whileUsing, preciseLocation: nil))
        #expect(settled.accept(buttonResult(true)) == [.noEffect(.alreadyGranted)])
        #expect(!settled.temporary)
    }

    @Test("B3 a grant is precise and one-time; the dialog shows until two consents, and every time over persistent approximate")
    func b3() {
        var state = buttonDevice()
        // First tap: the consent dialog, answered Allow.
        #expect(state.accept(buttonResult(true)) == consentDialogAllowed + [.statusChanged(from: .notDetermined, to: .authorizedWhenInUse)])
        #expect(state.android.foreground == .precise && state.android.buttonGrant && state.temporary)
        #expect(state.android.buttonConsents == 1 && !state.android.background && !state.android.approximateUnderButton)
        #expect(state.summary == StatusSummary(status: .authorizedWhenInUse, provisional: false, temporary: true, accuracy: .full))
        state.accept([leftForeground, observed([]), backInForeground])
        // Second tap: the dialog again (AOSP saves SHOWN, then CONSENTED).
        #expect(Array(state.accept(buttonResult(true)).prefix(2)) == consentDialogAllowed)
        #expect(state.android.buttonConsents == 2)
        state.accept([leftForeground, observed([]), backInForeground])
        // Third tap: a direct grant.
        #expect(state.accept(buttonResult(true)) == [.statusChanged(from: .notDetermined, to: .authorizedWhenInUse)])
        #expect(state.android.buttonConsents == 2 && state.temporary)

        // Approximate held persistently: precise on top, one-time; no consent saved, so a dialog every time.
        var approximate = buttonDevice()
        approximate.accept([request(foregroundPermissions), result([.coarse], denied: [.fine])])
        #expect(approximate.accept(buttonResult(true)) == consentDialogAllowed + [.accuracyChanged(from: .reduced, to: .full)])
        #expect(approximate.android.buttonConsents == 0 && approximate.android.approximateUnderButton && approximate.temporary)
        approximate.grantThroughButtonAndLapse(keeping: [.coarse])
        #expect(approximate.android.buttonConsents == 0)
        #expect(Array(approximate.accept(buttonResult(true)).prefix(2)) == consentDialogAllowed)

        // Whatever the state says of blocks: the grant clears the foreground's and precise's
        // denials and blocks; background is unchanged.
        var blocked = buttonDevice()
        blocked.accept([request(foregroundPermissions), result([], denied: foregroundPermissions),
                        request(foregroundPermissions), result([], denied: foregroundPermissions)])
        #expect(blocked.android.foregroundBlocked && blocked.status == .denied)
        #expect(blocked.accept(buttonResult(true)).last == .statusChanged(from: .denied, to: .authorizedWhenInUse))
        #expect(!blocked.android.foregroundBlocked && blocked.android.foregroundDenials == 0)
        #expect(!blocked.android.preciseBlocked && blocked.android.preciseDenials == 0 && !blocked.android.background)

        // A prompt of another kind that is pending stays pending.
        var asking = buttonDevice()
        asking.accept([request(foregroundPermissions), result([.coarse], denied: [.fine]), request([.background])])
        #expect(asking.pendingPrompt == .backgroundSettings)
        asking.accept(buttonResult(true))
        #expect(asking.pendingPrompt == .backgroundSettings && asking.android.pendingRequest == [.background])
    }

    @Test("B4 a refusal: blocked, the inferred Don't allow (one precise denial, the second blocks), or notGrantable; nothing below targetSdk 31")
    func b4() {
        var state = buttonDevice()
        #expect(state.accept(buttonResult(false)) == consentDialogRefused)
        #expect(state.android.preciseDenials == 1 && !state.android.preciseBlocked)
        #expect(state.status == .notDetermined, "precise's denials never change the status")
        #expect(state.accept(buttonResult(false)) == consentDialogRefused)
        #expect(state.android.preciseBlocked)
        #expect(state.accept(buttonResult(false)) == [.noEffect(.blocked)])

        // Don't allow clears the consent; approximate is untouched.
        var consented = buttonDevice()
        consented.grantThroughButtonAndLapse()
        #expect(consented.android.buttonConsents == 1)
        consented.accept([request(foregroundPermissions), result([.coarse], denied: [.fine])])
        #expect(consented.accept(buttonResult(false)) == consentDialogRefused)
        #expect(consented.android.buttonConsents == 0 && consented.android.foreground == .approximate && consented.android.preciseDenials == 1)

        // Two consents: a direct grant was due, and device policy refused it.
        var direct = buttonDevice()
        direct.grantThroughButtonAndLapse()
        direct.grantThroughButtonAndLapse()
        #expect(direct.android.buttonConsents == 2)
        #expect(direct.accept(buttonResult(false)) == [.noEffect(.notGrantable)])
        #expect(direct.android.preciseDenials == 0 && direct.android.buttonConsents == 2)

        // While precise is held no dialog shows (B2): a refusal then is read as notGrantable (decision).
        var held = buttonDevice()
        held.accept(buttonResult(true))
        #expect(held.accept(buttonResult(false)) == [.noEffect(.notGrantable)])

        // The foreground group blocked: the button shows nothing.
        var blocked = buttonDevice()
        blocked.accept([request(foregroundPermissions), result([], denied: foregroundPermissions),
                        request(foregroundPermissions), result([], denied: foregroundPermissions)])
        #expect(blocked.accept(buttonResult(false)) == [.noEffect(.blocked)])

        // Below targetSdk 31 a refusal counts no denial and changes nothing.
        var old = buttonDevice(target: 30)
        let before = old
        #expect(old.accept(buttonResult(false)) == [.noEffect(.unchanged)])
        #expect(old == before)
    }

    @Test("B5 a dismissed dialog or a dropped tap sends nothing: sessions alone infer no answer and change no permission")
    func b5() {
        var state = buttonDevice()
        state.accept([request(foregroundPermissions), result([.coarse], denied: [.fine])])
        let before = state
        // The button on screen, tapped, the dialog dismissed: the app sees only its session.
        for event in [buttonOpened, buttonClosed, buttonOpened, .locationButtonSession(.failed, cause: "RuntimeException")] {
            let effects = state.accept(event)
            #expect(!effects.contains(.promptShown(.locationButton)), "\(event)")
            #expect(!effects.contains { if case .answerInferred = $0 { true } else { false } }, "\(event)")
        }
        var expected = before
        expected.android.locationButtonSession = false
        #expect(state == expected)
        #expect(state.android.buttonConsents == 0 && state.android.preciseDenials == 0)
    }

    @Test("B6 a lapse returns to what was held before, temporary false, no denial, no correction; Settings make it persistent")
    func b6() {
        var state = buttonDevice()
        state.accept(buttonResult(true))
        // Still held while the app is away: nothing changes.
        state.accept(leftForeground)
        #expect(state.accept(observed(foregroundPermissions)) == [.noEffect(.confirmed)])
        #expect(state.temporary)
        // Gone: the grant lapsed.
        #expect(state.accept(observed([])) == [.reconciled(from: .authorizedWhenInUse, to: .notDetermined)])
        #expect(!state.temporary && !state.android.buttonGrant && state.android.buttonConsents == 1)
        #expect(state.android.foregroundDenials == 0 && state.android.preciseDenials == 0 && state.status == .notDetermined)

        // Over persistent approximate: back to approximate. The dialog's answer stays as inferred.
        var approximate = buttonDevice()
        approximate.accept([request(foregroundPermissions), result([.coarse], denied: [.fine]), buttonResult(true), leftForeground])
        let effects = approximate.accept(observed([.coarse]))
        #expect(effects == [.reconciled(from: .authorizedWhenInUse, to: .authorizedWhenInUse), .accuracyChanged(from: .full, to: .reduced)])
        #expect(approximate.android.foreground == .approximate && !approximate.temporary)

        // Settings' whileUsing or always make the grant persistent.
        for setting in [SettingsAuthorization.whileUsing, .always] {
            var granted = buttonDevice()
            granted.accept([buttonResult(true), .settingsChanged(authorization: setting, preciseLocation: nil)])
            #expect(!granted.temporary && !granted.android.buttonGrant && granted.android.foreground == .precise, "\(setting)")
        }
        // The precise switch turned off: approximate, and the grant still lapses.
        var switched = buttonDevice()
        switched.accept([buttonResult(true), .settingsChanged(authorization: nil, preciseLocation: false)])
        #expect(switched.android.foreground == .approximate && switched.temporary)
        #expect(switched.accept(observed([.coarse])) == [.noEffect(.confirmed)], "the one-time approximate still holds")
        switched.accept([leftForeground, observed([])])
        #expect(!switched.temporary && switched.status == .notDetermined)
    }

    @Test("B7 the consent returns to 0 on never or askEveryTime revoking a grant, askEveryTime after never, the precise switch off, D8 and I1; whileUsing and always keep it")
    func b7() {
        func consented() -> DeviceState {
            var state = buttonDevice()
            state.grantThroughButtonAndLapse()
            #expect(state.android.buttonConsents == 1)
            return state
        }
        // `never` revoking a grant.
        var never = consented()
        never.accept([buttonResult(true), .settingsChanged(authorization: .never, preciseLocation: nil)])
        #expect(never.android.buttonConsents == 0 && never.status == .denied)
        // `never` with nothing granted keeps it; `askEveryTime` after it clears it.
        var afterNever = consented()
        afterNever.accept(.settingsChanged(authorization: .never, preciseLocation: nil))
        #expect(afterNever.android.buttonConsents == 1)
        afterNever.accept(.settingsChanged(authorization: .askEveryTime, preciseLocation: nil))
        #expect(afterNever.android.buttonConsents == 0)
        // `askEveryTime` revoking a grant clears it; re-selected with nothing granted, it keeps it.
        var ask = consented()
        ask.accept(.settingsChanged(authorization: .askEveryTime, preciseLocation: nil))
        #expect(ask.android.buttonConsents == 1)
        ask.accept([buttonResult(true), .settingsChanged(authorization: .askEveryTime, preciseLocation: nil)])
        #expect(ask.android.buttonConsents == 0 && ask.status == .notDetermined)
        // The precise switch turned off.
        var precise = consented()
        precise.accept([buttonResult(true), .settingsChanged(authorization: nil, preciseLocation: false)])
        #expect(precise.android.buttonConsents == 0)
        // `whileUsing` and `always` keep it.
        for setting in [SettingsAuthorization.whileUsing, .always] {
            var kept = consented()
            kept.accept(.settingsChanged(authorization: setting, preciseLocation: nil))
            #expect(kept.android.buttonConsents == 1, "\(setting)")
        }
        // D8: reset with the rest; the app's session stays open.
        var reset = consented()
        reset.accept([buttonOpened, .permissionsReset(.unusedApp)])
        #expect(reset.android.buttonConsents == 0 && reset.android.locationButtonSession)
        // I1: a reinstall resets it and ends the session.
        var reinstalled = buttonDevice()
        reinstalled.accept(.contextReported(DeviceContext(installID: "install-1")))
        reinstalled.accept([buttonOpened, buttonResult(true)])
        #expect(reinstalled.accept(.contextReported(DeviceContext(installID: "install-2"))) == [
            .reset(.reinstalled), .sessionChanged(session: "locationButton", active: false),
            .statusChanged(from: .authorizedWhenInUse, to: .notDetermined),
        ])
        #expect(reinstalled.android == AndroidPermissionState() && !reinstalled.temporary)
    }

    @Test("B8 FINE only for the button: fine alone or over approximate returns at once, fine with coarse shows approximate only; background unaffected")
    func b8() {
        var state = buttonDevice(fineOnly: true)
        #expect(state.accept(request([.fine])) == [.noEffect(.onlyForLocationButton)])
        #expect(state.android.foregroundDenials == 0 && state.android.preciseDenials == 0 && state.pendingPrompt == nil)
        #expect(state.accept(request(foregroundPermissions)) == [.promptShown(.foreground)])
        #expect(state.accept(result([.coarse], denied: [.fine])) == [
            .answerInferred(prompt: .foreground, choice: .approximateWhileUsing),
            .reconciled(from: .notDetermined, to: .authorizedWhenInUse), .accuracyChanged(from: .full, to: .reduced),
        ])
        // The upgrade: no dialog, no denial.
        #expect(state.accept(request(foregroundPermissions)) == [.noEffect(.onlyForLocationButton)])
        #expect(state.android.preciseDenials == 0 && state.pendingPrompt == nil)
        // Background requests go through the background prompt as before.
        #expect(state.accept(request([.background])) == [.promptShown(.backgroundSettings)])

        // A result granting fine to the approximate-only dialog is the device's truth: no answer inferred.
        var truth = buttonDevice(fineOnly: true)
        truth.accept(request(foregroundPermissions))
        #expect(truth.accept(result(foregroundPermissions)) == [.reconciled(from: .notDetermined, to: .authorizedWhenInUse)])
        #expect(truth.pendingPrompt == nil && truth.android.foreground == .precise && !truth.temporary)

        // Settings may still grant precise persistently.
        var settings = buttonDevice(fineOnly: true)
        settings.accept(.settingsChanged(authorization: .whileUsing, preciseLocation: nil))
        #expect(settings.android.foreground == .precise && !settings.temporary)

        // D11's block comes before B8.
        var blocked = buttonDevice(fineOnly: true)
        blocked.accept([request(foregroundPermissions), result([.coarse], denied: [.fine]), buttonResult(false), buttonResult(false)])
        #expect(blocked.android.preciseBlocked)
        #expect(blocked.accept(request(foregroundPermissions)) == [.noEffect(.blocked)])

        // Not in force below API 37 or targetSdk 31: the ordinary rules (D2).
        var api36 = buttonDevice(api: 36, fineOnly: true)
        #expect(api36.accept(request([.fine])) == [.noEffect(.fineNeedsCoarse)])
        var target30 = buttonDevice(target: 30, fineOnly: true)
        #expect(target30.accept(request([.fine])) == [.promptShown(.foreground)])

        // The flag needs fine declared, judged on the context after the event: 422 validationFailed naming it.
        var noFine = androidDevice(api: 37, declared: [.coarse])
        noFine.expectRejection(.contextReported(DeviceContext(fineOnlyForLocationButton: true)), .fineNotDeclared)
        do {
            _ = try noFine.apply(.contextReported(DeviceContext(fineOnlyForLocationButton: true)))
        } catch {
            #expect(error.isValidation && error.field == "data.fineOnlyForLocationButton")
        }
        var dropsFine = buttonDevice(fineOnly: true)
        dropsFine.expectRejection(.contextReported(DeviceContext(declaredPermissions: [.coarse, .locationButton])), .fineNotDeclared)
        var apple = makeDevice(.iOS, "18.0")
        apple.expectRejection(.contextReported(DeviceContext(fineOnlyForLocationButton: false)), .notOnThisPlatform)
    }
}

@Suite("Android 17's location button: the gate", .timeLimit(.minutes(1)))
struct LocationButtonGateTests {
    static let share = Feature(key: "share", requires: .whenInUse, services: [.standard], accuracy: .full)
    static let nearby = Feature(key: "nearby", requires: .whenInUse, services: [.standard])
    static let trips = Feature(key: "trips", requires: .always, services: [.standard], accuracy: .full)
    static let tripsAny = Feature(key: "trips-any", requires: .always, services: [.standard])
    static let tracking = Feature(key: "tracking", requires: .whenInUse, services: [.standard], accuracy: .full, background: true)
    static let geofence = Feature(key: "geofence", requires: .whenInUse, services: [.regionMonitoring])

    /// The decision's reason, action and missing keys.
    static func verdict(_ state: DeviceState, _ feature: Feature) -> GateVerdict {
        let decision = state.decide(feature, version: 1)
        return GateVerdict(decision.reason, decision.action, missingKeys: decision.missingKeys)
    }

    @Test("A session-scoped feature that needs precise shows the button where the dialog was advised; accuracy any keeps requestForeground")
    func showLocationButton() {
        var state = buttonDevice()
        #expect(Self.verdict(state, Self.share) == GateVerdict(.notDetermined, .showLocationButton))
        #expect(Self.verdict(state, Self.nearby) == GateVerdict(.notDetermined, .requestForeground))
        #expect(Self.verdict(state, Self.trips) == GateVerdict(.notDetermined, .requestForeground), "not session-scoped")
        state.accept([request(foregroundPermissions), result([], denied: foregroundPermissions)])
        #expect(Self.verdict(state, Self.share) == GateVerdict(.denied, .showLocationButton))
        state.accept([request(foregroundPermissions), result([.coarse], denied: [.fine])])
        #expect(Self.verdict(state, Self.share) == GateVerdict(.reducedAccuracy, .showLocationButton))
        #expect(state.decide(Self.nearby, version: 1).enabled)
        // Precise blocked: the button answers false with no dialog, so Settings.
        state.accept([buttonResult(false), buttonResult(false)])
        #expect(Self.verdict(state, Self.share) == GateVerdict(.reducedAccuracy, .openSettings))
        var none = buttonDevice()
        none.accept([buttonResult(false), buttonResult(false)])
        #expect(Self.verdict(none, Self.share) == GateVerdict(.notDetermined, .openSettings))
        // The location switch off still wins.
        var off = buttonDevice()
        off.accept(.locationServicesChanged(enabled: false))
        #expect(Self.verdict(off, Self.share) == GateVerdict(.locationServicesDisabled, .enableLocationServices))
        // Where the button is not available: the dialog as before.
        #expect(Self.verdict(buttonDevice(api: 36), Self.share) == GateVerdict(.notDetermined, .requestForeground))
        #expect(Self.verdict(androidDevice(api: 37), Self.share) == GateVerdict(.notDetermined, .requestForeground))
    }

    @Test("A button grant enables session-scoped features, temporary only where they would not be enabled without it; never the background, Always or geofences")
    func temporaryAuthorization() {
        var state = buttonDevice()
        state.accept([buttonResult(true), request([.background]), result([.background])])
        #expect(state.status == .authorizedAlways && state.temporary)
        let share = state.decide(Self.share, version: 1)
        #expect(share.enabled && share.temporary)
        for feature in [Self.trips, Self.tripsAny, Self.tracking, Self.geofence] {
            let decision = state.decide(feature, version: 1)
            #expect(Self.verdict(state, feature) == GateVerdict(.temporaryAuthorization, .none), "\(feature.key)")
            #expect(!decision.enabled && decision.temporary, "\(feature.key)")
        }
        // Over persistent approximate and background: what approximate serves stays enabled, not temporary.
        var approximate = buttonDevice()
        approximate.accept([request(foregroundPermissions), result([.coarse], denied: [.fine]), request([.background]), result([.background]),
                            buttonResult(true)])
        #expect(approximate.temporary)
        let nearby = approximate.decide(Self.nearby, version: 1)
        #expect(nearby.enabled && !nearby.temporary)
        let tripsAny = approximate.decide(Self.tripsAny, version: 1)
        #expect(tripsAny.enabled && !tripsAny.temporary)
        #expect(Self.verdict(approximate, Self.trips) == GateVerdict(.temporaryAuthorization, .none))
        let shareOnce = approximate.decide(Self.share, version: 1)
        #expect(shareOnce.enabled && shareOnce.temporary)
        // Made persistent in Settings: enabled, not temporary.
        approximate.accept(.settingsChanged(authorization: .always, preciseLocation: nil))
        let trips = approximate.decide(Self.trips, version: 1)
        #expect(trips.enabled && !trips.temporary)
    }

    @Test("FINE only for the button: precise the button cannot serve is preciseOnlyViaButton, action none")
    func preciseOnlyViaButton() {
        var state = buttonDevice(fineOnly: true)
        #expect(Self.verdict(state, Self.share) == GateVerdict(.notDetermined, .showLocationButton))
        #expect(Self.verdict(state, Self.trips) == GateVerdict(.preciseOnlyViaButton, .none))
        #expect(Self.verdict(state, Self.geofence) == GateVerdict(.preciseOnlyViaButton, .none))
        #expect(Self.verdict(state, Self.nearby) == GateVerdict(.notDetermined, .requestForeground))
        state.accept([request(foregroundPermissions), result([.coarse], denied: [.fine]), request([.background]), result([.background])])
        #expect(Self.verdict(state, Self.trips) == GateVerdict(.preciseOnlyViaButton, .none))
        #expect(Self.verdict(state, Self.share) == GateVerdict(.reducedAccuracy, .showLocationButton))
        // With no button, even a session-scoped feature can get precise from Settings alone.
        let noButton = buttonDevice(declared: [.coarse, .fine, .background], fineOnly: true)
        #expect(Self.verdict(noButton, Self.share) == GateVerdict(.preciseOnlyViaButton, .none))
        // Precise held persistently: nothing to say.
        state.accept(.settingsChanged(authorization: nil, preciseLocation: true))
        #expect(state.decide(Self.trips, version: 1).enabled)
        // The operator's rows come first.
        var switchedOff = Self.trips
        switchedOff.disabled = true
        #expect(Self.verdict(buttonDevice(fineOnly: true), switchedOff) == GateVerdict(.disabledByOperator, .none))
    }
}
