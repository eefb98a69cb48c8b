import Foundation
import LocationAuthorization

/// How an app on Android 17 uses the location button (SPEC §12, "The location button").
struct LocationButtonApp {
    /// Features that approximate location serves ask with the runtime dialog first; the button
    /// is for the one-off precise uses (what Play asks of apps targeting API 37).
    var asksDialogFirst: Bool
    /// Code that still asks for `fine` with the dialog although the manifest marks it
    /// `onlyForLocationButton`: B8 refuses it at once.
    var asksFineAnyway: Bool
    /// The screens with the button the person opens.
    var visits: Int
}

/// What a tap on the button came to, as far as the person's next move goes.
enum ButtonTap {
    /// `onPermissionResult(true)`.
    case granted
    /// "Don't allow" in the consent dialog: `onPermissionResult(false)`.
    case declined
    /// `onPermissionResult(false)` with nothing shown: the foreground group or precise is
    /// blocked, or device policy refused a direct grant.
    case notGrantable
    /// The consent dialog closed with Back or a tap outside: nothing reaches the app (B5).
    case nothing
}

/// The devices of `PopulationSimulator.buttonShare`: Android 17 (API 37) with an app build that
/// declares USE_LOCATION_BUTTON (targetSdk 35 to 37), about a third of them with FINE marked
/// `onlyForLocationButton`. Paths: the button's sessions opened, closed, left open until the app
/// terminates, and failed with the error's class name (B1); taps while precise is held (B2); the
/// consent dialog answered Allow, twice before taps grant directly, and every time over
/// approximate location held persistently (B3); "Don't allow", twice of which blocks precise, and
/// the refusals that follow with nothing shown, over a blocked group too, and direct grants that
/// device policy refuses (B4); dialogs closed with Back, which send nothing (B5); one-time grants
/// that lapse in the background or at termination and that an observation finds gone, back to
/// nothing or to the approximate held before (B6); Settings that make a grant persistent or revoke
/// it (B6, B7); approximate location through the dialog first, approximate choices only and
/// requests for `fine` refused at once where the manifest marks it (B8); and the paths the other
/// Android devices take (background, Settings, hibernation, reinstalls), through the same steps.
/// Every event goes through the reducer as it is made (`SimulatedDevice.emit`), so none is
/// rejected.
extension AndroidScript {
    mutating func runLocationButtonApp() {
        let made = Self.makeButtonContext(&device)
        context = made.context
        app = made.app
        buttonApp = made.button
        install()
        device.emit(.contextReported(context))
        granted = statePermissions
        appState(.foreground)
        if device.chance(0.06) { observe() }
        if made.button.asksDialogFirst { askForeground() }
        if made.button.asksFineAnyway && device.chance(0.7) { askFineAnyway() }
        for visit in 0..<made.button.visits {
            if visit > 0 { leaveAfterButton() }
            showButton()
        }
        if buttonOneTime || device.chance(0.4) { leaveAfterButton() }
        askBackground()
        changeSettingsNowAndThen()
        if device.chance(0.25) { showButton() }
        switchLocationNowAndThen()
        hibernateNowAndThen()
        reinstallNowAndThen()
        if device.chance(0.3) { terminate() }
    }

    // MARK: - The button

    /// A screen with the location button (B1): its session opens, or fails at once now and then;
    /// the person taps the button most of the time, and again after a refusal now and then; the
    /// app closes the session when the screen goes, or leaves it open (the app's termination ends
    /// it; opened again meanwhile, it changes nothing), and now and then Android loses it
    /// (`onSessionError`). The app checks its permissions before it shows the button.
    mutating func showButton() {
        if !device.state.inForeground { appState(.foreground) }
        checkIfChanged()
        if device.chance(0.05) {
            let cause = failureCause()
            device.emit(.locationButtonSession(.failed, cause: cause))
            return
        }
        device.emit(.locationButtonSession(.opened))
        if device.chance(0.85) {
            for _ in 0..<3 {
                let again: Double
                switch tapButton() {
                case .granted: again = 0.08
                case .declined: again = 0.45
                case .notGrantable: again = 0.15
                case .nothing: again = 0.3
                }
                guard device.chance(again) else { break }
            }
        }
        let end = device.uniform()
        if end < 0.04 {
            let cause = failureCause()
            device.emit(.locationButtonSession(.failed, cause: cause))
        } else if end < 0.8 {
            device.emit(.locationButtonSession(.closed))
        }
    }

    /// A tap, and what Android makes of it (AOSP's LocationButtonViewModel): with precise held, a
    /// grant at once (ALREADY_GRANTED, B2); with the foreground group or precise blocked, a
    /// refusal with nothing shown (NOT_GRANTABLE, B4); the consent dialog while approximate is
    /// held persistently or fewer than two consents were given (SHOW_UI: Allow, "Don't allow",
    /// or closed, which sends nothing, B5), where someone who refused once refuses more often;
    /// otherwise a direct grant (CONSENTED, B3), which device policy refuses now and then (B4).
    mutating func tapButton() -> ButtonTap {
        let android = device.state.android
        if granted.contains(.fine) {
            device.emit(.locationButtonResult(granted: true))
            return .granted
        }
        if android.foregroundBlocked || android.preciseBlocked {
            device.emit(.locationButtonResult(granted: false))
            return .notGrantable
        }
        let approximateHeld = android.foreground != .none && (!android.buttonGrant || android.approximateUnderButton)
        if approximateHeld || android.buttonConsents < AndroidPermissionState.consentsForDirectGrant {
            let refusedBefore = android.preciseDenials > 0
            let weights: [(PromptChoice, Double)] = [
                (.allow, refusedBefore ? 0.45 : 0.7), (.dontAllow, refusedBefore ? 0.4 : 0.18), (.dismissed, 0.12),
            ]
            switch choose(weights) {
            case .allow:
                break
            case .dontAllow:
                device.emit(.locationButtonResult(granted: false))
                return .declined
            default:
                return .nothing
            }
        } else if device.chance(0.05) {
            device.emit(.locationButtonResult(granted: false))
            return .notGrantable
        }
        receiveButtonGrant()
        return .granted
    }

    /// B3: precise for the session, and approximate where it was not held, both one-time; what
    /// was held persistently before stays when the grant lapses (B6). Under a dialog's "Only this
    /// time" nothing does.
    mutating func receiveButtonGrant() {
        if !buttonOneTime { keptAfterButton = oneTime ? [] : granted }
        device.emit(.locationButtonResult(granted: true))
        granted.formUnion([.coarse, .fine])
        buttonOneTime = true
    }

    /// B8: code written before the manifest marked FINE `onlyForLocationButton` asks for it with
    /// the dialog: `fine` alone, or on top of approximate location; Android refuses at once
    /// (noEffect `onlyForLocationButton`) and the app reports the result it gets.
    mutating func askFineAnyway() {
        request(hasForeground ? [.coarse, .fine] : [.fine])
    }

    /// The app leaves the screen and the foreground: terminated now and then (a one-time grant
    /// lapses at once, B6), else to the background, with the app's location foreground service
    /// now and then, which keeps a one-time grant while it runs. Without one the grant lapses
    /// after about a minute; the app finds it gone when it checks, in the background now and
    /// then, else on its return (B6's observation, the first after the app left the foreground).
    mutating func leaveAfterButton() {
        if device.chance(0.2) {
            relaunch()
            return
        }
        let service = app.usesForegroundService && hasForeground && device.chance(0.5)
        appState(.background, service: service)
        if device.state.inUse && device.chance(0.5) {
            // The service stops in the background.
            appState(.background)
        }
        if lapses && !device.state.inUse && device.chance(0.85) { lapse() }
        if device.chance(0.3) { observe() }
        appState(.foreground)
        checkIfChanged()
    }

    /// `onSessionError`'s class name as the app reports it, or none now and then.
    mutating func failureCause() -> String? {
        let causes: [(String?, Double)] = [
            ("java.lang.SecurityException", 0.3), ("android.os.DeadObjectException", 0.25),
            ("java.lang.IllegalStateException", 0.25), (nil, 0.2),
        ]
        return choose(causes)
    }

    // MARK: - Devices and apps

    /// Android 17 devices with the app's builds that use the button (targetSdk 35 to 37), whose
    /// manifests declare USE_LOCATION_BUTTON with coarse and fine (the button needs fine),
    /// background for the apps that want it, FOREGROUND_SERVICE_LOCATION for most of those that
    /// run a location foreground service, and mark FINE `onlyForLocationButton` in about a third.
    static func makeButtonContext(_ device: inout SimulatedDevice) -> (context: DeviceContext, app: AndroidApp, button: LocationButtonApp) {
        let builds: [((String, Int), Double)] = [(("6.0.0", 37), 0.6), (("5.9.2", 36), 0.3), (("5.8.0", 35), 0.1)]
        let (appVersion, target) = device.choose(builds)
        let fineOnly = device.chance(0.35)
        let asksDialogFirst = device.chance(0.45)
        let asksFineAnyway = fineOnly && device.chance(0.5)
        // The dialog asks for fine with coarse where old code does (B8 then offers approximate
        // choices only), and now and then in an app without the flag.
        let wantsPrecise = fineOnly ? asksFineAnyway : device.chance(0.2)
        let wantsBackground = device.chance(0.2)
        let reportsRationale = device.chance(0.85)
        let usesForegroundService = device.chance(0.25)
        let visits = device.choose([(1, 0.25), (2, 0.3), (3, 0.25), (4, 0.2)])
        let app = AndroidApp(
            wantsPrecise: wantsPrecise, wantsBackground: wantsBackground, asksFineAlone: false, asksTogether: false,
            reportsRationale: reportsRationale, usesForegroundService: usesForegroundService)
        var declared: Set<AndroidPermission> = [.coarse, .fine, .locationButton]
        if wantsBackground { declared.insert(.background) }
        if usesForegroundService && device.chance(0.8) { declared.insert(.foregroundServiceLocation) }
        let context = DeviceContext(
            platform: .android, appVersion: appVersion, apiLevel: LocationButton.firstAPILevel, targetSdk: target,
            declaredPermissions: declared, fineOnlyForLocationButton: fineOnly)
        let button = LocationButtonApp(asksDialogFirst: asksDialogFirst, asksFineAnyway: asksFineAnyway, visits: visits)
        return (context, app, button)
    }
}
