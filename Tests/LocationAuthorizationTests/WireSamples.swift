@testable import LocationAuthorization

/// Samples of every JSON form the domain has two writers and two readers of (`Codable`, and
/// the stored forms of `StoredJSON.swift`): every event type and every effect kind, several of
/// each, with their optional members present and absent. The switches have no `default`, so a
/// new event type or effect kind is a compile error here until it has samples, and the tests
/// that walk `EventType.allCases` and `Effect.Kind.allCases` then compare its forms.
///
/// Every sample is valid client input (the `Codable` reader accepts it) and has one JSON form,
/// so that every reader must give it back equal.
enum WireSamples {
    /// Every sample event, type by type in `EventType.allCases` order.
    static var allEvents: [LocationEvent] { EventType.allCases.flatMap(events) }

    /// Every sample effect, kind by kind in `Effect.Kind.allCases` order.
    static var allEffects: [Effect] { Effect.Kind.allCases.flatMap(effects) }

    /// Contexts: nothing reported, every Apple member, every Android member, characters to
    /// escape, empty and several-key sets, with and without an `installId`, a later launch
    /// that names no platform.
    static let contexts: [DeviceContext] = [
        DeviceContext(),
        DeviceContext(platform: .iPadOS, osVersion: OSVersion(17, 4), appVersion: "3.1",
                      usageDescriptions: [UsageDescriptionKey.whenInUse], temporaryUsagePurposeKeys: ["Nav"],
                      defaultAccuracyReduced: true, requireExplicitServiceSession: true, backgroundLocationMode: false),
        DeviceContext(platform: .iOS, osVersion: OSVersion(17, 4), appVersion: "5.2 \"beta\" \\ /é😀",
                      usageDescriptions: [UsageDescriptionKey.whenInUse, UsageDescriptionKey.always, UsageDescriptionKey.alwaysAndWhenInUse],
                      temporaryUsagePurposeKeys: ["Nav", "Trip.v2_b-1"], defaultAccuracyReduced: false,
                      installID: "install \"1\" é/😀"),
        DeviceContext(platform: .macOS, osVersion: OSVersion(13, 3, 1), usageDescriptions: [], temporaryUsagePurposeKeys: []),
        DeviceContext(platform: .visionOS, osVersion: OSVersion(2, 0), requireExplicitServiceSession: false, backgroundLocationMode: true),
        DeviceContext(platform: .macCatalyst, appVersion: "1"),
        DeviceContext(installID: "6F1C1F5E-5C1A-4D8E-9F00-0C2B8F9F0A11"),
        DeviceContext(platform: .android, osVersion: OSVersion(14), appVersion: "7.1", apiLevel: 34, targetSdk: 34,
                      declaredPermissions: [.coarse, .fine, .foregroundServiceLocation], installID: "install-1"),
        DeviceContext(platform: .android, apiLevel: 37, targetSdk: 37, declaredPermissions: [.coarse, .fine, .locationButton],
                      fineOnlyForLocationButton: true),
        DeviceContext(platform: .android, apiLevel: 22, targetSdk: 22, declaredPermissions: [], fineOnlyForLocationButton: false),
        DeviceContext(platform: .android, apiLevel: 99, targetSdk: 1, declaredPermissions: Set(AndroidPermission.allCases)),
        DeviceContext(appVersion: "2.1", apiLevel: 35, installID: "install-2"),
        DeviceContext(fineOnlyForLocationButton: false),
    ]

    /// Samples of one event type; never empty.
    static func events(_ type: EventType) -> [LocationEvent] {
        switch type {
        case .contextReported:
            return contexts.map(LocationEvent.contextReported)
        case .authorizationRequested:
            return [
                .authorizationRequested(.whenInUse), .authorizationRequested(.always),
                .authorizationRequested(.temporaryFullAccuracy("Nav")), .authorizationRequested(.temporaryFullAccuracy("Purpose.Key-2_x")),
            ]
        case .promptResponded:
            return PromptChoice.allCases.map(LocationEvent.promptResponded)
        case .alwaysEventOccurred:
            return AlwaysService.allCases.map(LocationEvent.alwaysEventOccurred)
        case .appStateChanged:
            // Apple's form (`backgroundIndicator`) and Android's (`foregroundService`, no indicator).
            return AppState.allCases.flatMap { state -> [LocationEvent] in
                [
                    .appStateChanged(state, backgroundIndicator: false), .appStateChanged(state, backgroundIndicator: true),
                    .appStateChanged(state, backgroundIndicator: false, foregroundService: false),
                    .appStateChanged(state, backgroundIndicator: false, foregroundService: true),
                ]
            }
        case .settingsChanged:
            // Each member alone, and both.
            return SettingsAuthorization.allCases.map { LocationEvent.settingsChanged(authorization: $0, preciseLocation: nil) } + [
                .settingsChanged(authorization: nil, preciseLocation: true), .settingsChanged(authorization: nil, preciseLocation: false),
                .settingsChanged(authorization: .whileUsing, preciseLocation: true),
                .settingsChanged(authorization: .askNextTime, preciseLocation: false),
            ]
        case .locationServicesChanged:
            return [.locationServicesChanged(enabled: true), .locationServicesChanged(enabled: false)]
        case .restrictionChanged:
            return [.restrictionChanged(restricted: true), .restrictionChanged(restricted: false)]
        case .statusObserved:
            return AuthorizationStatus.allCases.flatMap { status -> [LocationEvent] in
                [.statusObserved(status, accuracy: nil), .statusObserved(status, accuracy: .full), .statusObserved(status, accuracy: .reduced)]
            }
        case .serviceSessionChanged:
            return SessionRequirement.allCases.map { LocationEvent.serviceSessionChanged(.started("trip", $0)) } + [
                .serviceSessionChanged(.started("nav.main", .always, fullAccuracyPurposeKey: "Nav")),
                .serviceSessionChanged(.started(String(repeating: "s", count: 64), .whenInUse, fullAccuracyPurposeKey: "Trip.v2_b-1")),
                .serviceSessionChanged(.invalidated("nav.main")), .serviceSessionChanged(.invalidated("Trip_2-b.c")),
            ]
        case .backgroundActivityChanged:
            return [.backgroundActivityChanged(active: true), .backgroundActivityChanged(active: false)]
        case .diagnosticObserved:
            // Every source with no flag, one flag and all its flags; only serviceSession names
            // a session (and must).
            return DiagnosticSource.allCases.flatMap { source -> [LocationEvent] in
                let session: String? = source == .serviceSession ? "nav.main" : nil
                return [
                    .diagnosticObserved(Diagnostic(source: source, session: session, flags: [])),
                    .diagnosticObserved(Diagnostic(source: source, session: session, flags: Set(source.allowedFlags.sorted().prefix(1)))),
                    .diagnosticObserved(Diagnostic(source: source, session: session, flags: source.allowedFlags)),
                ]
            } + [.diagnosticObserved(Diagnostic(source: .serviceSession, session: "trip", flags: [.alwaysAuthorizationDenied, .accuracyLimited]))]
        case .permissionsRequested:
            let requests: [Set<AndroidPermission>] = [[.coarse], [.fine], [.background], [.coarse, .fine], [.fine, .background], [.coarse, .fine, .background]]
            return requests.map(LocationEvent.permissionsRequested)
        case .permissionsResult:
            // `rationale` absent, empty and not; interrupted (empty arrays) and not.
            return [
                .permissionsResult(PermissionsResult(granted: [.coarse], denied: [.fine], rationale: [.fine], interrupted: false)),
                .permissionsResult(PermissionsResult(granted: [.coarse, .fine], denied: [], rationale: [], interrupted: false)),
                .permissionsResult(PermissionsResult(granted: [], denied: [.coarse, .fine, .background], rationale: nil, interrupted: false)),
                .permissionsResult(PermissionsResult(granted: [.background], denied: [.coarse], rationale: [.coarse, .background])),
                .permissionsResult(PermissionsResult(granted: [], denied: [], interrupted: true)),
            ]
        case .permissionsObserved:
            return [
                .permissionsObserved(granted: [.coarse, .fine, .background], locationEnabled: false),
                .permissionsObserved(granted: [.coarse], locationEnabled: true),
                .permissionsObserved(granted: [], locationEnabled: nil),
            ]
        case .permissionsReset:
            return PermissionsResetReason.allCases.map(LocationEvent.permissionsReset)
        case .locationButtonSession:
            // `cause` only with failed: without it, a nested class, the longest allowed.
            return LocationButtonSessionState.allCases.map { LocationEvent.locationButtonSession($0) } + [
                .locationButtonSession(.failed, cause: "android.os.RemoteException$Invalid_1"),
                .locationButtonSession(.failed, cause: "java.lang.SecurityException"),
                .locationButtonSession(.failed, cause: String(repeating: "E", count: LocationButton.causeBytes.upperBound)),
            ]
        case .locationButtonResult:
            return [.locationButtonResult(granted: true), .locationButtonResult(granted: false)]
        }
    }

    /// Samples of one effect kind; never empty.
    static func effects(_ kind: Effect.Kind) -> [Effect] {
        switch kind {
        case .promptShown:
            return Prompt.allCases.map(Effect.promptShown)
        case .statusChanged:
            return [.statusChanged(from: .notDetermined, to: .authorizedWhenInUse), .statusChanged(from: .authorizedAlways, to: .restricted)]
        case .accuracyChanged:
            return [.accuracyChanged(from: .full, to: .reduced), .accuracyChanged(from: .reduced, to: .full)]
        case .noEffect:
            return NoEffectReason.allCases.map(Effect.noEffect)
        case .failed:
            // No key, one, several with characters to escape.
            return FailureReason.allCases.map { Effect.failed($0, keys: []) } + [
                .failed(.missingUsageDescription, keys: [UsageDescriptionKey.whenInUse]),
                .failed(.missingUsageDescription, keys: [UsageDescriptionKey.whenInUse, "x\"y \\ /é😀\n"]),
                .failed(.missingBackgroundMode, keys: [UsageDescriptionKey.backgroundModes]),
                .failed(.notDeclared, keys: [AndroidPermission.fine.manifestName, AndroidPermission.coarse.manifestName]),
                .failed(.locationButtonError, keys: ["android.os.RemoteException$Invalid_1"]),
            ]
        case .eventDelivered:
            return [.eventDelivered(true), .eventDelivered(false)]
        case .reconciled:
            return [.reconciled(from: .denied, to: .authorizedAlways), .reconciled(from: .notDetermined, to: .restricted)]
        case .answerInferred:
            return [
                .answerInferred(prompt: .whenInUse, choice: .allowWhileUsing), .answerInferred(prompt: .foreground, choice: .approximateWhileUsing),
                .answerInferred(prompt: .locationButton, choice: .preciseOnce),
            ]
        case .answerCorrected:
            return [
                .answerCorrected(prompt: .whenInUse, from: .allowWhileUsing, to: .allowOnce),
                .answerCorrected(prompt: .foreground, from: .preciseWhileUsing, to: .preciseOnce),
            ]
        case .sessionChanged:
            return [.sessionChanged(session: "nav.main", active: true), .sessionChanged(session: LocationButton.sessionKey, active: false)]
        case .reset:
            return ResetReason.allCases.map(Effect.reset)
        }
    }
}
