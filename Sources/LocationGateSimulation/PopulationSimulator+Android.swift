import Foundation
import LocationAuthorization

/// The platforms of a simulated population (`locgate simulate --platform`).
public enum SimulatedPlatform: String, Sendable, Hashable, CaseIterable {
    /// Apple's platforms only: the population as it was before Android (the default). Benchmarks
    /// and tests depend on its volumes.
    case ios
    /// Android devices only (SPEC §12).
    case android
    /// Both kinds, about 45% of the devices on Android (`PopulationSimulator.mixedAndroidShare`).
    case mixed

    /// The share of Android devices, 0 to 1.
    public var androidShare: Double {
        switch self {
        case .ios: 0
        case .android: 1
        case .mixed: PopulationSimulator.mixedAndroidShare
        }
    }
}

/// What the app on an Android device does (SPEC §12).
struct AndroidApp {
    /// It asks for precise location (coarse and fine together); the others ask for approximate
    /// location (coarse) only.
    var wantsPrecise: Bool
    /// It wants "Allow all the time" (geofences, trip logs).
    var wantsBackground: Bool
    /// Old code that asks for fine alone first, which API 31+ ignores (D2).
    var asksFineAlone: Bool
    /// It asks for foreground and background in one request first (D3).
    var asksTogether: Bool
    /// Its results carry `shouldShowRequestPermissionRationale` (D5 below API 30).
    var reportsRationale: Bool
    /// It runs a location foreground service when it works in the background (D10).
    var usesForegroundService: Bool

    /// The foreground permissions it requests.
    var foregroundAsk: Set<AndroidPermission> { wantsPrecise ? [.coarse, .fine] : [.coarse] }
}

/// One Android device: API 28 to 35, an app build with its own targetSdk and manifest, and a
/// person who answers Android's dialogs at plausible rates. The app never sends
/// `promptResponded`: it reports what `onRequestPermissionsResult` gave it (`permissionsResult`,
/// which answers the dialog on screen as O2 does) and what `checkSelfPermission` says
/// (`permissionsObserved`). The script keeps what Android really holds (`granted`), which differs
/// from the backend's state only after an "Only this time" grant lapsed (D6) until the app checks
/// its permissions again, which it does before it asks and when it comes back to the foreground.
///
/// Paths: two denials that block (API 30+) and "Don't ask again" read from the rationale (below
/// 30); dialogs closed with Back, which the rationale tells from a denial (D5); approximate grants
/// on API 31+ and the precise upgrade, declined twice now and then, which blocks precise (D11); one-time grants that lapse in the
/// background or at termination (D6's correction); background through the API 29 dialog and the
/// Settings page on API 30+; foreground and background asked together (D3), fine alone (D2);
/// undeclared permissions; Settings changes, revocations among them (D7); reinstalls with a new
/// `installId` (I1); hibernation (D8); the location switch; location
/// foreground services, refused on API 34+ without a grant or the manifest's declaration (D10);
/// and apps with targetSdk 22 that have everything at install (D1). Every event goes through the
/// reducer as it is made (`SimulatedDevice.emit`), so none is rejected.
///
/// `observationsOnly` changes nothing here: an Android app never sees which button of a dialog
/// was pressed, only results and observations, which is what it reports anyway.
///
/// The devices of `PopulationSimulator.buttonShare` run API 37 with an app that uses the location
/// button (`runLocationButtonApp`, `PopulationSimulator+LocationButton.swift`) through the same
/// reports and steps.
struct AndroidScript {
    var device: SimulatedDevice
    var context = DeviceContext()
    var app = AndroidApp(
        wantsPrecise: true, wantsBackground: false, asksFineAlone: false, asksTogether: false, reportsRationale: true,
        usesForegroundService: false)
    /// What Android holds for the app now (`checkSelfPermission`).
    var granted: Set<AndroidPermission> = []
    /// The foreground grant is "Only this time": it lapses about a minute after the app left
    /// the foreground without a running location foreground service, or when it terminates.
    var oneTime = false
    /// The system location switch.
    var locationOn = true
    /// The app's id for this installation (I1), new at every install.
    var installID = ""
    /// The installations so far.
    var installs = 0
    /// The app's use of the location button (API 37), for the devices of `buttonShare`; nil for
    /// the others.
    var buttonApp: LocationButtonApp?
    /// The location button's one-time grant holds (B3): it lapses as "Only this time" does (B6).
    var buttonOneTime = false
    /// What Android holds once the button's grant lapsed: the approximate location (and
    /// background) held persistently before it, or nothing.
    var keptAfterButton: Set<AndroidPermission> = []

    init(device: SimulatedDevice) {
        self.device = device
    }

    var api: Int { context.androidAPILevel }
    var target: Int { context.androidTargetSdk }
    var declared: Set<AndroidPermission> { context.declaredAndroidPermissions }
    var hasForeground: Bool { !granted.isDisjoint(with: [.coarse, .fine]) }

    /// A one-time grant holds: the dialog's "Only this time" (D6) or the button's (B6).
    var lapses: Bool { oneTime || buttonOneTime }

    /// D1: an app targeting API 22 has every declared permission from its install on.
    var grantedAtInstall: Bool { api < 23 || target < 23 }

    /// The permissions the backend's state holds, as `checkSelfPermission` reports them (no
    /// background permission exists below API 29).
    var statePermissions: Set<AndroidPermission> {
        let android = device.state.android
        var permissions: Set<AndroidPermission>
        switch android.foreground {
        case .precise: permissions = [.coarse, .fine]
        case .approximate: permissions = [.coarse]
        case .none: return []
        }
        if android.background && api >= 29 { permissions.insert(.background) }
        return permissions
    }

    mutating func run() {
        let made = Self.makeContext(&device)
        context = made.context
        app = made.app
        install()
        device.emit(.contextReported(context))
        granted = statePermissions
        appState(.foreground)
        if grantedAtInstall {
            runInstalledGrants()
            return
        }
        if device.chance(0.06) { observe() }
        // Background before any foreground grant: Android answers at once (D4).
        if app.wantsBackground && api >= 29 && device.chance(0.08) { request([.background]) }

        askForeground()
        if oneTime || device.chance(0.5) { leaveAndReturn() }
        askPrecise()
        askBackground()
        workInBackground()
        changeSettingsNowAndThen()
        switchLocationNowAndThen()
        hibernateNowAndThen()
        reinstallNowAndThen()
        if device.chance(0.3) { terminate() }
    }

    // MARK: - Reports

    mutating func appState(_ state: AppState, service: Bool = false) {
        device.emit(.appStateChanged(state, backgroundIndicator: false, foregroundService: service))
    }

    /// `checkSelfPermission`, with `isLocationEnabled` half the time: the device is the truth
    /// (D9), and a one-time grant found gone corrects the answer (D6).
    mutating func observe() {
        let enabled: Bool? = device.chance(0.5) ? locationOn : nil
        device.emit(.permissionsObserved(granted: granted, locationEnabled: enabled))
    }

    /// A real app checks its permissions before it asks: after a lapse, the backend learns of it
    /// before the request.
    mutating func checkIfChanged() {
        if granted != statePermissions { observe() }
    }

    /// `requestPermissions`, then `onRequestPermissionsResult`: the person's answer when a dialog
    /// is shown (or the Settings page opened), Android's own at once for a blocked group. After a
    /// request Android ignores (D2's fine alone, D3's background with foreground) the app reports
    /// no result.
    mutating func request(_ permissions: Set<AndroidPermission>) {
        checkIfChanged()
        guard let effects = device.emit(.permissionsRequested(permissions)) else { return }
        if let prompt = device.state.pendingPrompt, effects.contains(.promptShown(prompt)) {
            answer(prompt)
        } else if effects.contains(.noEffect(.blocked)) || effects.contains(.noEffect(.foregroundFirst))
            || effects.contains(.noEffect(.onlyForLocationButton)) {
            // Android answers at once: what is granted stays granted (D11's block keeps coarse;
            // B8 refuses fine and keeps what is held).
            let asked = permissions.intersection(declared).intersection(AndroidPermission.requestable)
            let rationaleSet: Set<AndroidPermission>? = app.reportsRationale ? [] : nil
            device.emit(.permissionsResult(PermissionsResult(
                granted: asked.intersection(granted), denied: asked.subtracting(granted), rationale: rationaleSet)))
        }
    }

    /// Terminated, then launched again (its context, the foreground, a check of its permissions).
    mutating func terminate() {
        appState(.terminated)
        if lapses { lapse() }
    }

    mutating func relaunch() {
        terminate()
        device.emit(.contextReported(context))
        appState(.foreground)
        if granted != statePermissions || device.chance(0.4) { observe() }
    }

    /// A one-time grant is gone: foreground and background; after the button's alone, what was
    /// held persistently before it stays (B6).
    mutating func lapse() {
        granted = oneTime ? [] : keptAfterButton
        oneTime = false
        buttonOneTime = false
        keptAfterButton = []
    }

    // MARK: - Answers

    /// A weighted draw.
    mutating func choose<Choice>(_ weights: [(Choice, Double)]) -> Choice {
        device.choose(weights)
    }

    /// `shouldShowRequestPermissionRationale` for a group after a denial, when the app reports it:
    /// true after the first; after a later one false once the group is blocked (API 30+: the
    /// second denial; below 30: the person ticked "Don't ask again", offered from the second
    /// dialog on). An app that does not report it gets no tick from its users here.
    mutating func rationale(after denials: Int, for group: Set<AndroidPermission>) -> Set<AndroidPermission>? {
        guard app.reportsRationale else { return nil }
        if denials == 0 { return group }
        if api >= 30 { return [] }
        return device.chance(0.45) ? [] : group
    }

    /// The person's answer to the dialog on screen, as the result reports it; now and then the
    /// request is interrupted, or the dialog closed with Back (not the Settings page).
    mutating func answer(_ prompt: Prompt) {
        let asked = device.state.android.pendingRequest
        if device.chance(0.03) {
            device.emit(.permissionsResult(PermissionsResult(granted: [], denied: [], interrupted: true)))
            return
        }
        if prompt != .backgroundSettings && device.chance(0.1) {
            dismiss(prompt, asked: asked)
            return
        }
        switch prompt {
        case .foreground: answerForeground(asked)
        case .precise: answerPrecise(asked)
        case .backgroundDialog: answerBackgroundDialog(asked)
        case .backgroundSettings: answerBackgroundSettings(asked)
        default: return
        }
        granted = statePermissions
    }

    /// A dialog closed with Back or a tap outside: every permission asked and not held comes back
    /// denied, and Android records nothing, so `shouldShowRequestPermissionRationale` stays as it
    /// was: false before any denial, true after one (D5, D11).
    mutating func dismiss(_ prompt: Prompt, asked: Set<AndroidPermission>) {
        let android = device.state.android
        let group: Set<AndroidPermission>
        let denials: Int
        switch prompt {
        case .precise: (group, denials) = ([.fine], android.preciseDenials)
        case .backgroundDialog: (group, denials) = ([.background], android.backgroundDenials)
        default: (group, denials) = (asked.intersection([.coarse, .fine]), android.foregroundDenials)
        }
        let rationaleSet: Set<AndroidPermission>? = app.reportsRationale ? (denials == 0 ? [] : group) : nil
        device.emit(.permissionsResult(PermissionsResult(granted: asked.intersection(granted), denied: asked.subtracting(granted), rationale: rationaleSet)))
    }

    /// The foreground dialog: "While using the app", "Only this time" (API 30+), "Don't allow";
    /// from targetSdk 31 on API 31+, asked for coarse and fine, each with precise or approximate;
    /// "Allow all the time" when background was asked with it on API 29 (D3). Someone who
    /// refused once refuses more often.
    mutating func answerForeground(_ asked: Set<AndroidPermission>) {
        let foreground = asked.intersection([.coarse, .fine])
        let denials = device.state.android.foregroundDenials
        let deny = denials > 0 ? 0.5 : 0.25
        var weights: [(PromptChoice, Double)]
        if context.fineOnlyForLocationButtonInForce && foreground.contains(.fine) {
            // B8: FINE only for the location button: the dialog offers approximate choices only.
            weights = [(.approximateWhileUsing, 0.58), (.approximateOnce, 0.16)]
        } else if api >= 31 && target >= 31 && foreground == [.coarse, .fine] {
            weights = [(.preciseWhileUsing, 0.45), (.approximateWhileUsing, 0.13), (.preciseOnce, 0.12), (.approximateOnce, 0.04)]
        } else if api >= 30 {
            weights = [(.whileUsing, 0.58), (.onlyThisTime, 0.16)]
        } else {
            weights = [(.whileUsing, 0.74)]
        }
        weights.append((.deny, deny))
        if asked.contains(.background) && api == 29 { weights.append((.allowAllTheTime, 0.25)) }
        let choice = choose(weights)
        let result: PermissionsResult
        switch choice {
        case .deny:
            result = PermissionsResult(granted: [], denied: asked, rationale: rationale(after: denials, for: foreground))
        case .allowAllTheTime:
            result = PermissionsResult(granted: asked, denied: [])
        case .approximateWhileUsing, .approximateOnce:
            result = PermissionsResult(granted: [.coarse], denied: asked.subtracting([.coarse]))
        default:
            result = PermissionsResult(granted: foreground, denied: asked.subtracting(foreground))
        }
        device.emit(.permissionsResult(result))
        oneTime = choice.isOneTime
    }

    /// API 31+: the upgrade from approximate to precise; "Keep approximate" is a precise denial
    /// (D11), with `fine` in the rationale after the first and out of it after the second.
    mutating func answerPrecise(_ asked: Set<AndroidPermission>) {
        let precise = device.chance(0.5)
        let kept: Set<AndroidPermission> = precise ? [.coarse, .fine] : [.coarse]
        let rationaleSet = precise ? nil : rationale(after: device.state.android.preciseDenials, for: [.fine])
        device.emit(.permissionsResult(PermissionsResult(granted: kept.intersection(asked), denied: asked.subtracting(kept), rationale: rationaleSet)))
    }

    /// API 29: "Allow all the time", "Keep while-in-use access" and, when foreground was asked
    /// along, "Deny", which takes foreground away too.
    mutating func answerBackgroundDialog(_ asked: Set<AndroidPermission>) {
        let foreground = asked.intersection([.coarse, .fine])
        let denials = device.state.android.backgroundDenials
        var weights: [(PromptChoice, Double)] = [(.allowAllTheTime, 0.4), (.keepWhileUsing, 0.52)]
        if !foreground.isEmpty { weights.append((.deny, 0.08)) }
        let result: PermissionsResult
        switch choose(weights) {
        case .allowAllTheTime:
            result = PermissionsResult(granted: asked, denied: [])
        case .keepWhileUsing:
            result = PermissionsResult(granted: foreground, denied: [.background], rationale: rationale(after: denials, for: [.background]))
        default:
            result = PermissionsResult(granted: [], denied: asked, rationale: rationale(after: denials, for: [.background]))
        }
        device.emit(.permissionsResult(result))
    }

    /// API 30+: the app's location page in Settings, which the background request opened. "Ask
    /// every time" and "Don't allow" there take the foreground grant away: the backend hears of
    /// them as the Settings change they are (D7), then the result arrives with nothing pending.
    mutating func answerBackgroundSettings(_ asked: Set<AndroidPermission>) {
        let foreground = asked.intersection([.coarse, .fine])
        let denials = device.state.android.backgroundDenials
        let weights: [(PromptChoice, Double)] = [(.allowAllTheTime, 0.38), (.allowWhileUsing, 0.48), (.askEveryTime, 0.06), (.deny, 0.08)]
        let choice = choose(weights)
        switch choice {
        case .allowAllTheTime:
            device.emit(.permissionsResult(PermissionsResult(granted: asked, denied: [])))
        case .allowWhileUsing:
            device.emit(.permissionsResult(PermissionsResult(
                granted: foreground, denied: [.background], rationale: rationale(after: denials, for: [.background]))))
        default:
            let setting: SettingsAuthorization = choice == .deny ? .never : .askEveryTime
            device.emit(.settingsChanged(authorization: setting, preciseLocation: nil))
            oneTime = false
            buttonOneTime = false
            keptAfterButton = []
            let rationaleSet: Set<AndroidPermission>? = app.reportsRationale ? [] : nil
            device.emit(.permissionsResult(PermissionsResult(granted: [], denied: asked, rationale: rationaleSet)))
        }
    }

    // MARK: - Steps

    /// D1: a legacy build (targetSdk 22) on API 28 to 33 has its permissions from the install;
    /// its requests change nothing.
    mutating func runInstalledGrants() {
        request(app.foregroundAsk)
        if device.chance(0.5) { observe() }
        if device.chance(0.4) { appState(.background, service: app.usesForegroundService) }
        if device.chance(0.3) { appState(.terminated) }
    }

    /// Foreground location, as the app's code asks for it: now and then fine alone first (D2) or
    /// foreground and background together (D3), then the foreground group; after a refusal it
    /// explains and asks again, up to three requests in all, the last of which a block answers
    /// at once (D5).
    mutating func askForeground() {
        guard !hasForeground else { return }
        if app.asksFineAlone { request([.fine]) }
        if app.asksTogether && !hasForeground { request(app.foregroundAsk.union([.background])) }
        var requests = 0
        while !hasForeground && requests < 3 {
            if requests > 0 && !device.chance(0.6) { return }
            requests += 1
            request(app.foregroundAsk)
        }
    }

    /// After the permissions were found gone (a reset, a reinstall), the app asks again as it
    /// first did: with the dialog, or, for an app that uses the location button and does not ask
    /// with the dialog first, with the button.
    mutating func askAgain() {
        if let buttonApp, !buttonApp.asksDialogFirst {
            showButton()
        } else {
            askForeground()
        }
    }

    /// The app leaves the foreground: terminated now and then, else to the background, with a
    /// location foreground service for the apps that run one (D10), which keeps a one-time grant
    /// while it runs. Without one, a one-time grant lapses after about a minute away, or at once
    /// at termination; the app finds it gone when it checks on its return (D6), and asks again
    /// now and then.
    mutating func leaveAndReturn() {
        if device.chance(0.25) {
            relaunch()
        } else {
            let service = app.usesForegroundService && hasForeground && device.chance(0.7)
            appState(.background, service: service)
            if device.state.inUse && device.chance(0.5) {
                // The service stops in the background.
                appState(.background)
            }
            if lapses && !device.state.inUse && device.chance(0.85) { lapse() }
            appState(.foreground)
            if granted != statePermissions || device.chance(0.4) { observe() }
        }
        if !hasForeground && device.chance(0.6) { askForeground() }
    }

    /// API 31+: approximate location granted, then a feature that needs precise asks for fine
    /// and coarse again: the upgrade dialog (D2), and after a decline now and then again, which
    /// a second decline blocks (D11).
    mutating func askPrecise() {
        guard api >= 31, app.wantsPrecise, !oneTime, granted.contains(.coarse), !granted.contains(.fine) else { return }
        guard device.chance(0.6) else { return }
        request([.coarse, .fine])
        for _ in 0..<2 where !granted.contains(.fine) && granted.contains(.coarse) && device.chance(0.5) {
            request([.coarse, .fine])
        }
    }

    /// "Allow all the time" for the apps that want it, after a foreground grant (D4): the API 29
    /// dialog, asked for alone or with the foreground permissions; the Settings page on API 30+.
    /// Undeclared, the request fails (D2). After "While using" the app asks once more now and
    /// then, and a third time after a second refusal, which a block then answers (D5, API 30+).
    mutating func askBackground() {
        guard app.wantsBackground, api >= 29, !lapses, hasForeground, !granted.contains(.background) else { return }
        guard device.chance(0.8) else { return }
        guard declared.contains(.background) else {
            request([.background])
            return
        }
        for attempt in 0..<3 {
            if attempt > 0 && !device.chance(attempt == 1 ? 0.45 : 0.5) { return }
            let together = api == 29 && !device.state.android.backgroundBlocked && device.chance(0.5)
            request(together ? app.foregroundAsk.union([.background]) : [.background])
            if granted.contains(.background) || !hasForeground { return }
        }
    }

    /// Work in the background, with the app's location foreground service if it runs one: on API
    /// 34+ refused without a foreground grant, or with targetSdk 34+ without the manifest's
    /// FOREGROUND_SERVICE_LOCATION (D10); some apps try to start it without a grant. A check
    /// there now and then; back to the foreground most of the time.
    mutating func workInBackground() {
        guard device.chance(0.7) else { return }
        let service = app.usesForegroundService && (hasForeground || device.chance(0.5))
        appState(.background, service: service)
        if lapses && !device.state.inUse && device.chance(0.85) { lapse() }
        if device.chance(0.3) { observe() }
        if device.chance(0.75) {
            appState(.foreground)
            checkIfChanged()
        }
    }

    /// The app's location page in Settings now and then (D7): Allow all the time (offered when
    /// the manifest declares background, API 29+), Allow only while using, Ask every time (API
    /// 30+), Don't allow, or the precise switch (API 31+; turning it off restarts the app). The
    /// app may then check, and ask again; a block answers at once.
    mutating func changeSettingsNowAndThen() {
        guard device.chance(0.14) else { return }
        if api >= 31 && hasForeground && declared.contains(.fine) && app.wantsPrecise && !oneTime && device.chance(0.3) {
            let precise = !granted.contains(.fine)
            device.emit(.settingsChanged(authorization: nil, preciseLocation: precise))
            granted = statePermissions
            if !precise { relaunch() }
        } else {
            var options: [(SettingsAuthorization, Double)] = [(.never, 0.35), (.whileUsing, 0.3)]
            if api >= 29 && declared.contains(.background) { options.append((.always, 0.15)) }
            if api >= 30 { options.append((.askEveryTime, 0.2)) }
            let setting = choose(options)
            device.emit(.settingsChanged(authorization: setting, preciseLocation: nil))
            granted = statePermissions
            // Each of them ends a one-time grant: revoked, or made persistent (B6).
            oneTime = false
            buttonOneTime = false
            keptAfterButton = []
        }
        if device.chance(0.4) { observe() }
        if !hasForeground && device.state.inForeground && device.chance(0.4) { request(app.foregroundAsk) }
    }

    /// The system location switch off now and then, and on again half the time.
    mutating func switchLocationNowAndThen() {
        guard device.chance(0.05) else { return }
        locationOn = false
        device.emit(.locationServicesChanged(enabled: false))
        if device.chance(0.5) { observe() }
        if device.chance(0.5) {
            locationOn = true
            device.emit(.locationServicesChanged(enabled: true))
        }
    }

    /// Months unused: Android resets the app's permissions (D8). It is launched again, finds them
    /// gone and asks again now and then.
    mutating func hibernateNowAndThen() {
        guard device.chance(0.06) else { return }
        terminate()
        device.emit(.permissionsReset(.unusedApp))
        granted = []
        oneTime = false
        device.emit(.contextReported(context))
        appState(.foreground)
        if device.chance(0.6) { observe() }
        if device.chance(0.5) { askAgain() }
    }

    /// A new installation: a new `installId` on every context from now on (I1).
    mutating func install() {
        installs += 1
        installID = "install-\(installs)-\(device.index(below: 1 << 30))"
        context.installID = installID
    }

    /// The app deleted and installed again now and then (I1): Android forgets its permissions,
    /// the device id stays, and the new install reports a new `installId` at its first launch.
    mutating func reinstallNowAndThen() {
        guard device.chance(0.08) else { return }
        terminate()
        install()
        granted = grantedAtInstall ? context.declaredAndroidPermissions.intersection(AndroidPermission.requestable) : []
        oneTime = false
        device.emit(.contextReported(context))
        appState(.foreground)
        if device.chance(0.3) { observe() }
        if device.chance(0.7) { askAgain() }
    }

    // MARK: - Devices and apps

    /// API levels about as devices run them; the app's builds with their targetSdk (some old
    /// ones: 28, 29, and a few 22, which Android 14 no longer installs) and manifests.
    static func makeContext(_ device: inout SimulatedDevice) -> (context: DeviceContext, app: AndroidApp) {
        let api = device.choose([(28, 0.06), (29, 0.1), (30, 0.12), (31, 0.08), (32, 0.04), (33, 0.16), (34, 0.23), (35, 0.21)])
        let builds: [((String, Int), Double)] = [
            (("5.4.0", 35), 0.38), (("5.2.1", 34), 0.3), (("4.9.0", 33), 0.1), (("4.6.2", 31), 0.06), (("4.2.0", 30), 0.04),
            (("3.8.1", 29), 0.05), (("3.5.0", 28), 0.05), (("1.9.7", 22), 0.02),
        ]
        var (appVersion, target) = device.choose(builds)
        if target < 23 && api >= 34 { (appVersion, target) = ("3.5.0", 28) }
        let wantsPrecise = device.chance(0.8)
        let wantsBackground = device.chance(0.45)
        let asksFineAlone = device.chance(0.1)
        let asksTogether = device.chance(0.3)
        let reportsRationale = device.chance(0.85)
        let usesForegroundService = device.chance(0.3)
        let app = AndroidApp(
            wantsPrecise: wantsPrecise, wantsBackground: wantsBackground, asksFineAlone: wantsPrecise && asksFineAlone,
            asksTogether: wantsBackground && asksTogether, reportsRationale: reportsRationale,
            usesForegroundService: usesForegroundService)
        var declared: Set<AndroidPermission> = app.foregroundAsk
        // Now and then a manifest that lacks what the code asks for.
        if wantsPrecise && device.chance(0.05) { declared.remove(.fine) }
        if device.chance(wantsBackground ? 0.95 : 0.1) { declared.insert(.background) }
        if usesForegroundService && device.chance(target >= 34 ? 0.8 : 0.5) { declared.insert(.foregroundServiceLocation) }
        let context = DeviceContext(
            platform: .android, appVersion: appVersion, apiLevel: api, targetSdk: target, declaredPermissions: declared)
        return (context, app)
    }
}

extension SimulatedDevice {
    /// One of the weighted items (the last one when rounding leaves nothing).
    mutating func choose<Choice>(_ weights: [(Choice, Double)]) -> Choice {
        let total = weights.reduce(0) { $0 + $1.1 }
        var pick = uniform() * total
        for (choice, weight) in weights {
            pick -= weight
            if pick < 0 { return choice }
        }
        return weights[weights.count - 1].0
    }
}

extension PromptChoice {
    /// An "Only this time" answer to Android's foreground dialog.
    var isOneTime: Bool { self == .onlyThisTime || self == .preciseOnce || self == .approximateOnce }
}
