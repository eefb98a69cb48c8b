import Testing

@testable import LocationAuthorization

/// An Android device at an API level and targetSdk, with the manifest's permissions (all four
/// by default).
func androidDevice(api: Int = 34, target: Int? = nil, declared: Set<AndroidPermission>? = nil) -> DeviceState {
    var state = DeviceState()
    let context = DeviceContext(platform: .android, apiLevel: api, targetSdk: target ?? api, declaredPermissions: declared)
    do {
        _ = try state.apply(.contextReported(context))
    } catch {
        Issue.record("the Android context was refused: \(error)")
    }
    return state
}

func request(_ permissions: Set<AndroidPermission>) -> LocationEvent { .permissionsRequested(permissions) }
func result(_ granted: Set<AndroidPermission>, denied: Set<AndroidPermission> = [], rationale: Set<AndroidPermission>? = nil) -> LocationEvent {
    .permissionsResult(PermissionsResult(granted: granted, denied: denied, rationale: rationale, interrupted: false))
}
func observed(_ granted: Set<AndroidPermission>) -> LocationEvent { .permissionsObserved(granted: granted, locationEnabled: nil) }
let foregroundPermissions: Set<AndroidPermission> = [.coarse, .fine]

@Suite("Android: D1-D11", .timeLimit(.minutes(1)))
struct AndroidRulesTests {
    @Test("D1 below API 23 (or targetSdk 23) every declared permission is granted at install")
    func d1() {
        var state = androidDevice(api: 22)
        #expect(state.status == .authorizedAlways && state.android.foreground == .precise)
        #expect(state.accept(request(foregroundPermissions)) == [.noEffect(.grantedAtInstall)])
        var old = androidDevice(api: 30, target: 22, declared: [.coarse])
        #expect(old.status == .authorizedAlways && old.effectiveAccuracy == .reduced)
        #expect(old.accept(request([.coarse])) == [.noEffect(.grantedAtInstall)])
    }

    @Test("D2 foreground prompt; precise upgrade; API 31+ ignores fine alone; undeclared permissions fail and drop out")
    func d2() {
        var state = androidDevice(api: 34)
        #expect(state.accept(request([.fine])) == [.noEffect(.fineNeedsCoarse)])
        #expect(state.accept(request(foregroundPermissions)) == [.promptShown(.foreground)])
        #expect(state.accept(result([.coarse], denied: [.fine])) == [
            .answerInferred(prompt: .foreground, choice: .approximateWhileUsing),
            .reconciled(from: .notDetermined, to: .authorizedWhenInUse), .accuracyChanged(from: .full, to: .reduced),
        ])
        #expect(state.android.foregroundDenials == 0, "approximate for a precise request is a grant")
        #expect(state.accept(request(foregroundPermissions)) == [.promptShown(.precise)])
        #expect(state.accept(result([.coarse, .fine])) == [
            .answerInferred(prompt: .precise, choice: .precise), .reconciled(from: .authorizedWhenInUse, to: .authorizedWhenInUse),
            .accuracyChanged(from: .reduced, to: .full),
        ])
        var noFine = androidDevice(api: 34, declared: [.coarse])
        #expect(noFine.accept(request(foregroundPermissions)) == [
            .failed(.notDeclared, keys: ["android.permission.ACCESS_FINE_LOCATION"]), .promptShown(.foreground),
        ])
        #expect(noFine.android.pendingRequest == [.coarse])
        var older = androidDevice(api: 30)
        older.accept(request(foregroundPermissions))
        #expect(older.accept(result(foregroundPermissions)).first == .answerInferred(prompt: .foreground, choice: .whileUsing))
        // targetSdk < 31 on API 31+: no coarse-with-fine rule and no accuracy choice.
        var target30 = androidDevice(api: 33, target: 30)
        #expect(target30.accept(request([.fine])) == [.promptShown(.foreground)])
        #expect(target30.accept(result([.coarse, .fine])).first == .answerInferred(prompt: .foreground, choice: .whileUsing))
        #expect(!Prompt.foreground.offeredChoices(in: target30.context).contains(.preciseWhileUsing))
        // The upgrade from approximate is the ordinary dialog below targetSdk 31.
        target30.accept(.settingsChanged(authorization: nil, preciseLocation: false))
        #expect(target30.accept(request(foregroundPermissions)) == [.promptShown(.foreground)])
        // allowAllTheTime is never a button of the first dialog on API 30+.
        for api in [30, 31, 34] {
            for target in [28, 29, 30, api] {
                let context = DeviceContext(platform: .android, apiLevel: api, targetSdk: target)
                #expect(!Prompt.foreground.offeredChoices(in: context).contains(.allowAllTheTime), "API \(api) targetSdk \(target)")
            }
        }
        #expect(Prompt.foreground.offeredChoices(in: DeviceContext(platform: .android, apiLevel: 29, targetSdk: 28)).contains(.allowAllTheTime))
    }

    @Test("D3 targetSdk 30+ on API 30+ ignores background asked with foreground; API 29 shows it on the foreground dialog")
    func d3() {
        var state = androidDevice(api: 33)
        #expect(state.accept(request([.coarse, .fine, .background])) == [.noEffect(.backgroundWithForeground)])
        #expect(state.pendingPrompt == nil)
        var q = androidDevice(api: 29)
        #expect(q.accept(request([.coarse, .fine, .background])) == [.promptShown(.foreground)])
        #expect(q.accept(result([.coarse, .fine, .background])) == [
            .answerInferred(prompt: .foreground, choice: .allowAllTheTime), .reconciled(from: .notDetermined, to: .authorizedAlways),
        ])
        // API 29, "Allow only while using" where background was asked: a background denial.
        var qWhile = androidDevice(api: 29)
        qWhile.accept(request([.coarse, .fine, .background]))
        #expect(qWhile.accept(result(foregroundPermissions, denied: [.background])).first == .answerInferred(prompt: .foreground, choice: .whileUsing))
        #expect(qWhile.android.backgroundDenials == 1)
        // targetSdk < 30 on API 30+: the dialog shows foreground only; background is no denial
        // and is then asked as in D4.
        var r = androidDevice(api: 31, target: 29)
        #expect(r.accept(request([.coarse, .fine, .background])) == [.promptShown(.foreground)])
        #expect(r.accept(result(foregroundPermissions, denied: [.background])).first == .answerInferred(prompt: .foreground, choice: .whileUsing))
        #expect(r.android.backgroundDenials == 0 && r.status == .authorizedWhenInUse)
        #expect(r.accept(request([.background])) == [.promptShown(.backgroundSettings)])
    }

    @Test("D4 background alone: foreground first; the API 29 dialog; the API 30+ Settings page; targetSdk 28 on API 29 offers allowAllTheTime")
    func d4() {
        var state = androidDevice(api: 34)
        #expect(state.accept(request([.background])) == [.noEffect(.foregroundFirst)])
        state.accept([request(foregroundPermissions), result(foregroundPermissions)])
        #expect(state.accept(request([.background])) == [.promptShown(.backgroundSettings)])
        #expect(state.accept(result([.coarse, .fine, .background])) == [
            .answerInferred(prompt: .backgroundSettings, choice: .allowAllTheTime), .reconciled(from: .authorizedWhenInUse, to: .authorizedAlways),
        ])
        var q = androidDevice(api: 29)
        q.accept([request(foregroundPermissions), result(foregroundPermissions)])
        #expect(q.accept(request([.background])) == [.promptShown(.backgroundDialog)])
        #expect(q.accept(result(foregroundPermissions, denied: [.background])).first == .answerInferred(prompt: .backgroundDialog, choice: .keepWhileUsing))
        #expect(q.android.backgroundDenials == 1 && q.status == .authorizedWhenInUse)
        // targetSdk 28 on API 29: background joins every foreground request, granted only when chosen.
        var legacy = androidDevice(api: 29, target: 28)
        #expect(legacy.accept(request(foregroundPermissions)) == [.promptShown(.foreground)])
        #expect(legacy.android.pendingRequest == [.coarse, .fine, .background])
        #expect(legacy.accept(result(foregroundPermissions)).first == .answerInferred(prompt: .foreground, choice: .whileUsing))
        #expect(legacy.status == .authorizedWhenInUse && legacy.android.backgroundDenials == 0)
        var legacyAlways = androidDevice(api: 29, target: 28)
        legacyAlways.accept(request(foregroundPermissions))
        #expect(legacyAlways.accept(result([.coarse, .fine, .background])).first == .answerInferred(prompt: .foreground, choice: .allowAllTheTime))
        #expect(legacyAlways.status == .authorizedAlways)
        // On API 30+ a legacy app's foreground grant brings no background.
        var legacyR = androidDevice(api: 31, target: 28)
        legacyR.accept([request(foregroundPermissions), result(foregroundPermissions)])
        #expect(legacyR.status == .authorizedWhenInUse && !legacyR.android.background)
        // The Settings page left without background: a denial for targetSdk 30+, none below.
        var page = androidDevice(api: 34)
        page.accept([request(foregroundPermissions), result(foregroundPermissions), request([.background]), result(foregroundPermissions, denied: [.background])])
        #expect(page.android.backgroundDenials == 1)
        var oldPage = androidDevice(api: 34, target: 29)
        oldPage.accept([request(foregroundPermissions), result(foregroundPermissions), request([.background])])
        #expect(oldPage.pendingPrompt == .backgroundSettings)
        #expect(oldPage.accept(result(foregroundPermissions, denied: [.background])).first == .answerInferred(prompt: .backgroundSettings, choice: .allowWhileUsing))
        #expect(oldPage.android.backgroundDenials == 0 && !oldPage.android.backgroundBlocked)
        #expect(oldPage.accept(request([.background])) == [.promptShown(.backgroundSettings)])
    }

    @Test("D5 API 30+: the second denial blocks, and a blocked group answers at once; below 30 the rationale decides")
    func d5() {
        var state = androidDevice(api: 34)
        state.accept(request(foregroundPermissions))
        #expect(state.accept(result([], denied: foregroundPermissions)) == [
            .answerInferred(prompt: .foreground, choice: .deny), .reconciled(from: .notDetermined, to: .denied),
        ])
        #expect(state.android.foregroundDenials == 1 && !state.android.foregroundBlocked)
        state.accept([request(foregroundPermissions), result([], denied: foregroundPermissions)])
        #expect(state.android.foregroundBlocked)
        #expect(state.accept(request(foregroundPermissions)) == [.noEffect(.blocked)])
        // Interrupted: the prompt ends, nothing else.
        var dismissed = androidDevice(api: 34)
        dismissed.accept(request(foregroundPermissions))
        #expect(dismissed.accept(.permissionsResult(PermissionsResult(granted: [], denied: [], interrupted: true))) == [.noEffect(.unchanged)])
        #expect(dismissed.pendingPrompt == nil && dismissed.android.foregroundDenials == 0)
        var pie = androidDevice(api: 28)
        pie.accept([request(foregroundPermissions), result([], denied: foregroundPermissions, rationale: foregroundPermissions)])
        pie.accept([request(foregroundPermissions), result([], denied: foregroundPermissions)])
        #expect(pie.android.foregroundDenials == 2 && !pie.android.foregroundBlocked)
        pie.accept([request(foregroundPermissions), result([], denied: foregroundPermissions, rationale: [])])
        #expect(pie.android.foregroundBlocked)
    }

    @Test("D6 a one-time grant found gone at the first observation after leaving the foreground is corrected, not denied")
    func d6() {
        var state = androidDevice(api: 34)
        state.accept([request(foregroundPermissions), result(foregroundPermissions)])
        #expect(state.android.correctableAnswer == .preciseWhileUsing)
        state.accept(.appStateChanged(.background, backgroundIndicator: false))
        #expect(state.accept(observed([])) == [
            .reconciled(from: .authorizedWhenInUse, to: .notDetermined),
            .answerCorrected(prompt: .foreground, from: .preciseWhileUsing, to: .preciseOnce),
        ])
        #expect(state.android.foregroundDenials == 0 && state.android.correctableAnswer == nil)
        // The grant survived the first observation: it was While using, and stays uncorrected.
        var kept = androidDevice(api: 34)
        kept.accept([request(foregroundPermissions), result(foregroundPermissions), .appStateChanged(.terminated, backgroundIndicator: false)])
        #expect(kept.accept(observed(foregroundPermissions)) == [.noEffect(.confirmed)])
        #expect(!kept.accept(observed([])).contains { if case .answerCorrected = $0 { true } else { false } })
        // A Settings change in between: no correction.
        var changed = androidDevice(api: 34)
        changed.accept([request(foregroundPermissions), result(foregroundPermissions), .appStateChanged(.background, backgroundIndicator: false),
                        .settingsChanged(authorization: nil, preciseLocation: false)])
        #expect(changed.accept(observed([])) == [.reconciled(from: .authorizedWhenInUse, to: .notDetermined)])
    }

    @Test("D7 Settings: grants clear blocks; whileUsing and never revoke with one denial and no block; askEveryTime starts over; the precise switch")
    func d7() {
        var state = androidDevice(api: 34)
        state.accept([request(foregroundPermissions), result([], denied: foregroundPermissions), request(foregroundPermissions), result([], denied: foregroundPermissions)])
        #expect(state.android.foregroundBlocked)
        state.accept(.settingsChanged(authorization: .always, preciseLocation: nil))
        #expect(state.status == .authorizedAlways && !state.android.foregroundBlocked)
        state.accept(.settingsChanged(authorization: nil, preciseLocation: false))
        #expect(state.effectiveAccuracy == .reduced)
        // "Allow only while using": background revoked, one background denial.
        state.accept(.settingsChanged(authorization: .whileUsing, preciseLocation: nil))
        #expect(state.status == .authorizedWhenInUse && state.android.backgroundDenials == 1 && !state.android.backgroundBlocked)
        // "Don't allow": each granted group revoked with one denial, no block; the app may ask.
        state.accept(.settingsChanged(authorization: .never, preciseLocation: nil))
        #expect(state.status == .denied && !state.android.foregroundBlocked && state.android.foregroundDenials == 1)
        #expect(state.android.backgroundDenials == 0 || state.android.backgroundDenials == 1)
        #expect(state.accept(request(foregroundPermissions)) == [.promptShown(.foreground)])
        state.accept(result([], denied: foregroundPermissions))
        #expect(state.android.foregroundBlocked, "the dialog's denial after a Settings revocation is the second")
        state.accept(.settingsChanged(authorization: .askEveryTime, preciseLocation: nil))
        #expect(state.status == .notDetermined && state.android.foregroundDenials == 0 && !state.android.foregroundBlocked)
        // A foreground group that was not granted keeps its denials and block.
        var blocked = androidDevice(api: 34)
        blocked.accept([request(foregroundPermissions), result([], denied: foregroundPermissions), request(foregroundPermissions), result([], denied: foregroundPermissions)])
        blocked.accept(.settingsChanged(authorization: .never, preciseLocation: nil))
        #expect(blocked.android.foregroundBlocked && blocked.android.foregroundDenials == 2)
        #expect(blocked.android.backgroundDenials == 0, "a background neither granted nor blocked gets no denial")
        // A blocked background becomes one denial under whileUsing and never.
        var background = androidDevice(api: 34)
        background.accept([request(foregroundPermissions), result(foregroundPermissions)])
        for _ in 0..<2 { background.accept([request([.background]), result(foregroundPermissions, denied: [.background])]) }
        #expect(background.android.backgroundBlocked)
        background.accept(.settingsChanged(authorization: .whileUsing, preciseLocation: nil))
        #expect(!background.android.backgroundBlocked && background.android.backgroundDenials == 1)
        #expect(background.accept(request([.background])) == [.promptShown(.backgroundSettings)])
        state.expectRejection(.settingsChanged(authorization: .askNextTime, preciseLocation: nil), .notOnThisPlatform)
    }

    @Test("D8 a hibernation reset returns every grant to none and lets the app ask again")
    func d8() {
        var state = androidDevice(api: 34)
        state.accept([request(foregroundPermissions), result([], denied: foregroundPermissions), request(foregroundPermissions), result([], denied: foregroundPermissions)])
        state.accept(.permissionsReset(.unusedApp))
        #expect(state.status == .notDetermined && !state.android.foregroundBlocked)
        #expect(state.accept(request(foregroundPermissions)) == [.promptShown(.foreground)])
    }

    @Test("D9 observations reconcile; a foreground grant the state did not have ends a pending prompt; results without a prompt reconcile what they name")
    func d9() {
        var state = androidDevice(api: 34)
        state.accept(request(foregroundPermissions))
        #expect(state.accept(observed([.coarse])) == [.reconciled(from: .notDetermined, to: .authorizedWhenInUse), .accuracyChanged(from: .full, to: .reduced)])
        #expect(state.pendingPrompt == nil)
        #expect(state.accept(observed([.coarse])) == [.noEffect(.confirmed)])
        // Android answers a granted group at once: a result with no prompt pending.
        #expect(state.accept(result([.background])) == [.reconciled(from: .authorizedWhenInUse, to: .authorizedAlways)])
        #expect(state.android.foreground == .approximate)
        #expect(state.accept(.permissionsObserved(granted: [.coarse, .background], locationEnabled: false)) == [.reconciled(from: .authorizedAlways, to: .denied)])
    }

    @Test("D10 a location foreground service needs a grant on API 34+, and the declaration with targetSdk 34+")
    func d10() {
        var state = androidDevice(api: 34, declared: [.coarse, .fine])
        #expect(state.accept(.appStateChanged(.background, backgroundIndicator: false, foregroundService: true)) == [
            .failed(.foregroundServiceNotAllowed, keys: ["android.permission.FOREGROUND_SERVICE_LOCATION"]),
        ])
        #expect(!state.inUse)
        var granted = androidDevice(api: 34)
        #expect(granted.accept(.appStateChanged(.background, backgroundIndicator: false, foregroundService: true)) == [
            .failed(.foregroundServiceNotAllowed, keys: []),
        ])
        granted.accept([.appStateChanged(.foreground, backgroundIndicator: false), request(foregroundPermissions), result(foregroundPermissions)])
        #expect(granted.accept(.appStateChanged(.background, backgroundIndicator: false, foregroundService: true)).isEmpty)
        #expect(granted.inUse)
        var older = androidDevice(api: 33, declared: [.coarse])
        #expect(older.accept(.appStateChanged(.background, backgroundIndicator: false, foregroundService: true)).isEmpty)
        // ForegroundServiceTypePolicy enforces both only for apps targeting 34+.
        var olderTarget = androidDevice(api: 34, target: 33, declared: [.coarse])
        #expect(olderTarget.accept(.appStateChanged(.background, backgroundIndicator: false, foregroundService: true)).isEmpty)
        #expect(olderTarget.inUse)
    }

    @Test("Platform: Apple types on Android and Android types on Apple are refused naming type; the family is fixed; the first context needs the levels")
    func platforms() {
        var state = androidDevice(api: 34)
        state.expectRejection(requestWhenInUse, .notOnThisPlatform)
        state.expectRejection(.serviceSessionChanged(.started("nav", .none)), .notOnThisPlatform)
        state.expectRejection(.appStateChanged(.background, backgroundIndicator: true), .notOnThisPlatform)
        state.expectRejection(.contextReported(DeviceContext(platform: .iOS)), .platformFamilyChanged)
        var apple = makeDevice(.iOS, "18.0")
        apple.expectRejection(request(foregroundPermissions), .notOnThisPlatform)
        apple.expectRejection(.appStateChanged(.background, backgroundIndicator: false, foregroundService: true), .notOnThisPlatform)
        apple.expectRejection(.settingsChanged(authorization: .askEveryTime, preciseLocation: nil), .notOnThisPlatform)
        apple.expectRejection(.contextReported(DeviceContext(platform: .android, apiLevel: 34, targetSdk: 34)), .platformFamilyChanged)
        var fresh = DeviceState()
        fresh.expectRejection(.contextReported(DeviceContext(platform: .android, targetSdk: 34)), .missingAndroidLevel)
        do {
            _ = try fresh.apply(.contextReported(DeviceContext(platform: .android, apiLevel: 34)))
            Issue.record("a first Android context without targetSdk was accepted")
        } catch {
            #expect(error.field == "data.targetSdk" && error.isValidation)
        }
        // Later contexts may leave the levels out.
        var later = androidDevice(api: 34)
        #expect(later.accept(.contextReported(DeviceContext(appVersion: "2.0"))).isEmpty)
    }
}
