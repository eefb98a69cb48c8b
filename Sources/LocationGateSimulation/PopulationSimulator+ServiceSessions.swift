import Foundation
import LocationAuthorization

/// What the app of a device of the iOS 18 share does (SPEC §11).
struct ServiceSessionApp {
    enum Style {
        /// Declares NSLocationRequireExplicitServiceSession and starts its session explicitly.
        case explicitSession
        /// Relies on implicit sessions, but starts one of its own as well.
        case implicitSession
        /// Relies on implicit sessions alone: asks with a request method, or lets
        /// `CLLocationUpdate.liveUpdates` make Core Location ask; holds no session.
        case implicitUpdates
    }

    var style: Style
    /// The app's key for its session.
    var key: String
    var requirement: SessionRequirement
    /// The session's `fullAccuracyPurposeKey`; now and then one the build does not declare (K3).
    var purposeKey: String?

    var holdsSession: Bool { style != .implicitUpdates }
}

/// One device of the iOS 18 share: iOS 18.x, iPadOS 18, watchOS 11 or visionOS 2, with an app
/// that holds `CLServiceSession`s and reads diagnostics. Core Location prompts on the session's
/// behalf (V2) and asks again when Allow Once lapses (V3); the app runs in the background with a
/// `CLBackgroundActivitySession` (V5, failing without `location` in UIBackgroundModes), is
/// terminated and relaunched and re-takes its session or not (V1), and its sessions, live updates
/// and monitors report diagnostics (V4). Every event goes through the reducer as it is made
/// (`SimulatedDevice.emit`), so none is rejected.
///
/// About seven to eight events per device, against about six for the rest of the population.
struct ServiceSessionScript {
    var device: SimulatedDevice
    var context = DeviceContext()
    var app = ServiceSessionApp(style: .implicitUpdates, key: "location", requirement: .whenInUse)
    /// Reporting observations only, the person chose Allow Once, which the backend took for
    /// Allow While Using (O2): the escalation it then shows was never on screen, and the lapse
    /// is reported as the delegate sees it.
    var allowedOnce = false

    init(device: SimulatedDevice) {
        self.device = device
    }

    /// The session the app holds now, if any.
    var heldKey: String? {
        app.holdsSession && device.state.sessionState.sessions[app.key] != nil ? app.key : nil
    }

    mutating func run() {
        context = Self.makeContext(&device)
        app = Self.makeApp(for: context, &device)
        device.emit(.contextReported(context))

        // The first launch: the session starts, and Core Location asks for its goal (V2). Now and
        // then it starts out of use (a widget, a notification) and waits for the foreground (V1).
        if app.holdsSession && device.chance(0.08) {
            device.emit(.appStateChanged(.background, backgroundIndicator: false))
            startSession()
            device.emit(.appStateChanged(.foreground, backgroundIndicator: false))
        } else {
            device.emit(.appStateChanged(.foreground, backgroundIndicator: false))
            if app.style == .explicitSession && device.chance(0.15) {
                // Live updates before any session: the explicit key makes Core Location wait.
                diagnose(.liveUpdates, [.serviceSessionRequired])
            }
            if app.holdsSession { startSession() }
        }
        if !app.holdsSession || app.requirement == .none { askWithoutSession() }
        settle()

        // Allow Once lapses when the app leaves use (S1); the session asks again at the next
        // foreground (V3).
        if device.state.temporary || allowedOnce, device.chance(0.7) {
            device.emit(.appStateChanged(.background, backgroundIndicator: false))
            device.emit(.appStateChanged(.foreground, backgroundIndicator: false))
            reportLapsedAllowOnce()
            if (!app.holdsSession || app.requirement == .none) && device.state.status == .notDetermined
                && device.state.pendingPrompt == nil {
                device.emit(.authorizationRequested(.whenInUse))
            }
            settle()
        }

        // An app without a session of its own escalates as before iOS 18, and reads live updates.
        if !app.holdsSession {
            if device.state.status == .authorizedWhenInUse && !device.state.temporary && !allowedOnce && device.chance(0.3) {
                device.emit(.authorizationRequested(.always))
                settle()
            }
            if device.state.status.isAuthorized && device.chance(0.5) {
                let flags: Set<DiagnosticFlag> = device.chance(0.3) ? [.stationary] : []
                diagnose(.liveUpdates, flags)
            }
        }

        runInBackground()

        // CLMonitor's events for Always; now and then too many conditions (monitorLimited).
        if device.state.status == .authorizedAlways && device.chance(0.5) {
            let flags: Set<DiagnosticFlag> = device.chance(0.15) ? [.conditionLimitExceeded] : []
            diagnose(.monitor, flags)
        }
        // Precise Location turned off in Settings, learnt from a diagnostic; a session with a
        // purpose key then asks for full accuracy (V2) once the app is in front.
        if device.state.status.isAuthorized && device.state.accuracy == .full && device.chance(0.06) {
            diagnose(app.holdsSession ? .serviceSession : .liveUpdates, [.accuracyLimited])
            settle()
        }

        if heldKey != nil && device.chance(0.3) { relaunch() }

        if let key = heldKey, device.chance(0.2) {
            device.emit(.serviceSessionChanged(.invalidated(key)))
        }
        changeSettingsNowAndThen()
        if device.chance(0.15) {
            let status = device.state.status
            let accuracy = device.state.effectiveAccuracy
            device.emit(.statusObserved(status, accuracy: accuracy))
        }
        if device.chance(0.25) { device.emit(.appStateChanged(.terminated, backgroundIndicator: false)) }
    }

    // MARK: - Steps

    mutating func startSession() {
        device.emit(.serviceSessionChanged(.started(app.key, app.requirement, fullAccuracyPurposeKey: app.purposeKey)))
    }

    /// With no session that asks: a request method, or, for an app that relies on the implicit
    /// session of `liveUpdates`, Core Location's own prompt, which the backend learns of only
    /// from the diagnostic and the status the delegate then reports.
    mutating func askWithoutSession() {
        if app.style == .implicitUpdates && device.chance(0.5) {
            diagnose(.liveUpdates, [.authorizationRequestInProgress])
            let status: AuthorizationStatus = device.chance(0.75) ? .authorizedWhenInUse : .denied
            device.emit(.statusObserved(status, accuracy: nil))
            return
        }
        let request: AuthorizationRequest = app.style == .implicitUpdates && device.chance(0.2) ? .always : .whenInUse
        device.emit(.authorizationRequested(request))
    }

    /// Answers the prompts on screen, one after the other (a session's When In Use, then its
    /// escalation, then full accuracy), as long as the app is in front.
    mutating func settle() {
        for _ in 0..<4 {
            guard let prompt = device.state.pendingPrompt, device.state.inForeground else { return }
            let weights: [(PromptChoice, Double)]
            switch prompt {
            case .whenInUse, .alwaysFirst, .legacyAlways:
                weights = [(.allowWhileUsing, 0.6), (.allowOnce, 0.2), (.dontAllow, 0.2), (.allowAlways, 0.3)]
            case .alwaysUpgrade:
                // Never on screen after Allow Once, whatever an observing backend believes.
                guard device.state.status == .authorizedWhenInUse, !allowedOnce else { return }
                weights = [(.keepOnlyWhileUsing, 0.45), (.changeToAlwaysAllow, 0.55)]
            case .alwaysSecond:
                guard device.state.status == .authorizedAlways else { return }
                weights = [(.keepOnlyWhileUsing, 0.4), (.changeToAlwaysAllow, 0.6)]
            case .fullAccuracy:
                guard device.state.status.isAuthorized else { return }
                weights = [(.allowFullAccuracy, 0.65), (.keepReducedAccuracy, 0.35)]
            case .foreground, .backgroundDialog, .backgroundSettings, .precise, .locationButton:
                return  // Android's: never on an Apple device
            }
            guard let choice = device.pick(weights) else { return }
            respond(to: prompt, with: choice)
            if device.state.pendingPrompt == prompt { return }
        }
    }

    /// The answer as the app reports it. Reporting observations only, the answers a delegate
    /// cannot see come from the session's diagnostic (V4), and a denial often does too.
    mutating func respond(to prompt: Prompt, with choice: PromptChoice) {
        if device.observationsOnly {
            if let key = heldKey {
                if prompt == .alwaysUpgrade && choice == .keepOnlyWhileUsing {
                    diagnose(.serviceSession, [.alwaysAuthorizationDenied], session: key)
                    return
                }
                if prompt == .fullAccuracy && choice == .keepReducedAccuracy {
                    diagnose(.serviceSession, [.fullAccuracyDenied, .accuracyLimited], session: key)
                    return
                }
                if choice == .dontAllow && device.chance(0.5) {
                    diagnose(.serviceSession, [.authorizationDenied], session: key)
                    return
                }
            }
            if choice == .allowOnce { allowedOnce = true }
            device.emit(.promptResponded(choice))
            return
        }
        device.emit(.promptResponded(choice))
        if choice == .dontAllow, let key = heldKey, device.chance(0.4) {
            // The session's next diagnostic says so (V4: confirmed).
            diagnose(.serviceSession, [.authorizationDenied], session: key)
        }
    }

    /// Reporting observations only, after Allow Once the delegate reports notDetermined once the
    /// grant has lapsed, which corrects the inferred answer (O2).
    mutating func reportLapsedAllowOnce() {
        guard allowedOnce else { return }
        allowedOnce = false
        if device.state.status != .notDetermined {
            device.emit(.statusObserved(.notDetermined, accuracy: nil))
        }
    }

    /// Work in the background: with a background activity session (V5; without `location` in
    /// UIBackgroundModes it fails), live updates go on and report delivery diagnostics; without
    /// one, When In Use delivers nothing there.
    mutating func runInBackground() {
        let authorized = device.state.status.isAuthorized
        if device.chance(authorized ? 0.35 : 0.05) {
            device.emit(.backgroundActivityChanged(active: true))
            let indicator = device.state.sessionState.backgroundActivity
            device.emit(.appStateChanged(.background, backgroundIndicator: indicator))
            if authorized {
                let roll = device.uniform()
                if roll < 0.45 {
                    diagnose(.liveUpdates, [.stationary])
                } else if roll < 0.6 {
                    diagnose(.liveUpdates, [.locationUnavailable])
                } else if roll < 0.85 {
                    let flags: Set<DiagnosticFlag> = device.state.isInUse ? [] : [.insufficientlyInUse]
                    diagnose(.liveUpdates, flags)
                }
            } else if device.state.status == .denied {
                diagnose(.backgroundActivity, [.authorizationDenied])
            }
            if device.state.sessionState.backgroundActivity && device.chance(0.35) {
                device.emit(.backgroundActivityChanged(active: false))
            }
        } else if device.state.status == .authorizedWhenInUse && device.chance(0.2) {
            device.emit(.appStateChanged(.background, backgroundIndicator: false))
            diagnose(.liveUpdates, [.insufficientlyInUse])
        }
    }

    /// Terminated, then launched again (V1): most apps re-take their session at launch, before
    /// anything else, and the background activity with it; the others lose it when the relaunch
    /// window closes, and may start it again in the foreground.
    mutating func relaunch() {
        device.emit(.appStateChanged(.terminated, backgroundIndicator: false))
        var launch = context
        if device.chance(0.1) { launch.appVersion = "4.2.0" }
        device.emit(.contextReported(launch))
        let retakes = device.chance(0.72)
        if retakes {
            startSession()
            if device.state.sessionState.backgroundActivityResumable && device.chance(0.8) {
                device.emit(.backgroundActivityChanged(active: true))
            }
            if app.requirement == .always && device.state.status == .authorizedAlways && device.chance(0.5) {
                // Relaunched in the background for a monitor's event, inside the window.
                let flags: Set<DiagnosticFlag> = device.chance(0.1) ? [.conditionLimitExceeded] : []
                diagnose(.monitor, flags)
            }
        }
        // The next other event closes the window.
        if device.chance(0.5) {
            device.emit(.appStateChanged(.background, backgroundIndicator: false))
        } else {
            device.emit(.appStateChanged(.foreground, backgroundIndicator: false))
            if !retakes && device.chance(0.6) { startSession() }
            settle()
        }
        // An Allow Once the backend took for Allow While Using lapsed with the termination.
        if allowedOnce {
            reportLapsedAllowOnce()
            settle()
        }
    }

    /// Settings changes now and then; after Never, the session's diagnostics say denied (V4).
    /// Rarely, Location Services off or a restriction, learnt from a diagnostic.
    mutating func changeSettingsNowAndThen() {
        if device.chance(0.06) {
            var settings: [SettingsAuthorization] = [.never, .askNextTime, .whileUsing]
            if context.platform != .visionOS { settings.append(.always) }
            let setting = settings[device.index(below: settings.count)]
            device.emit(.settingsChanged(authorization: setting, preciseLocation: nil))
            if setting == .never && device.chance(0.7) {
                diagnose(app.holdsSession ? .serviceSession : .liveUpdates, [.authorizationDenied])
            }
            settle()
        }
        let roll = device.uniform()
        if roll < 0.02 {
            diagnose(.liveUpdates, [.authorizationDenied, .authorizationDeniedGlobally])
        } else if roll < 0.03 {
            diagnose(.liveUpdates, [.authorizationRestricted])
        }
    }

    /// A diagnostic as Apple's types carry it: only the source's own flags, and a session key
    /// with `serviceSession` alone (a live update's when the app holds no session).
    mutating func diagnose(_ source: DiagnosticSource, _ flags: Set<DiagnosticFlag>, session: String? = nil) {
        var source = source
        var session = session
        if source == .serviceSession {
            if session == nil { session = heldKey }
            if session == nil { source = .liveUpdates }
        } else {
            session = nil
        }
        device.emit(.diagnosticObserved(Diagnostic(source: source, session: session, flags: flags.intersection(source.allowedFlags))))
    }

    // MARK: - Devices and apps

    /// iOS 18.x mostly, some iPadOS 18, a few watchOS 11 and visionOS 2; the app's versions that
    /// adopted the iOS 18 APIs.
    static func makeContext(_ device: inout SimulatedDevice) -> DeviceContext {
        let roll = device.uniform()
        let platform: Platform
        let versions: [String]
        switch roll {
        case ..<0.74: (platform, versions) = (.iOS, ["18.0", "18.1", "18.2", "18.3"])
        case ..<0.9: (platform, versions) = (.iPadOS, ["18.1", "18.2"])
        case ..<0.96: (platform, versions) = (.watchOS, ["11.1", "11.2"])
        default: (platform, versions) = (.visionOS, ["2.1", "2.2"])
        }
        let version = versions[device.index(below: versions.count)]
        let appVersions = ["4.0.0", "4.1.0", "4.1.2"]
        let appVersion = appVersions[device.index(below: appVersions.count)]
        var keys: Set<String> = [UsageDescriptionKey.whenInUse, UsageDescriptionKey.alwaysAndWhenInUse]
        if device.chance(0.04) { keys.remove(UsageDescriptionKey.alwaysAndWhenInUse) }
        let reduced = device.chance(0.15)
        let explicit = device.chance(0.55)
        let backgroundMode = !device.chance(0.15)
        return DeviceContext(
            platform: platform, osVersion: OSVersion(version), appVersion: appVersion, usageDescriptions: keys,
            temporaryUsagePurposeKeys: ["Navigation"], defaultAccuracyReduced: reduced,
            requireExplicitServiceSession: explicit, backgroundLocationMode: backgroundMode)
    }

    /// An app that declares the explicit key always holds a session that asks (When In Use or
    /// Always); one that relies on implicit sessions may hold one (sometimes of requirement
    /// none, asking with a request method), or none.
    static func makeApp(for context: DeviceContext, _ device: inout SimulatedDevice) -> ServiceSessionApp {
        let style: ServiceSessionApp.Style =
            context.requiresExplicitServiceSession ? .explicitSession : (device.chance(0.65) ? .implicitSession : .implicitUpdates)
        let roll = device.uniform()
        let requirement: SessionRequirement
        if roll < 0.35 {
            requirement = .always
        } else if roll < 0.9 || style == .explicitSession {
            requirement = .whenInUse
        } else {
            requirement = .none
        }
        let key: String
        switch requirement {
        case .always: key = "tracking"
        case .whenInUse: key = "navigation"
        case .none: key = "nearby"
        }
        let purposeRoll = device.uniform()
        let purposeKey: String? = purposeRoll < 0.03 ? "Delivery" : (purposeRoll < 0.28 ? "Navigation" : nil)
        return ServiceSessionApp(style: style, key: key, requirement: requirement, purposeKey: purposeKey)
    }
}
