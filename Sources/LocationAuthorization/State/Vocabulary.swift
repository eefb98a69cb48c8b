/// The app's own grant, what the person chose (SPEC §2 `authorization`). `restricted` is not a
/// grant: it comes from parental controls or device management and lives in its own flag.
public enum Authorization: String, Sendable, Hashable, Codable, CaseIterable {
    case notDetermined
    case denied
    case authorizedWhenInUse
    case authorizedAlways

    /// The rank Settings changes are classified by (SPEC §6): denied < notDetermined <
    /// authorizedWhenInUse < authorizedAlways.
    public var rank: Int {
        switch self {
        case .denied: 0
        case .notDetermined: 1
        case .authorizedWhenInUse: 2
        case .authorizedAlways: 3
        }
    }
}

/// What `CLLocationManager.authorizationStatus` reports: derived from the state (SPEC §2).
public enum AuthorizationStatus: String, Sendable, Hashable, Codable, CaseIterable {
    case notDetermined
    case restricted
    case denied
    case authorizedWhenInUse
    case authorizedAlways

    /// Parses a `CLAuthorizationStatus` name as a device reports it. The deprecated
    /// `authorized` means `authorizedAlways` (O1).
    public init?(deviceName: String) {
        if deviceName == "authorized" {
            self = .authorizedAlways
        } else if let status = AuthorizationStatus(rawValue: deviceName) {
            self = status
        } else {
            return nil
        }
    }

    /// Whether the status lets the app use location at all.
    public var isAuthorized: Bool { self == .authorizedWhenInUse || self == .authorizedAlways }
}

/// `CLAccuracyAuthorization`.
public enum Accuracy: String, Sendable, Hashable, Codable, CaseIterable {
    case full
    case reduced
}

/// The three request methods of `CLLocationManager` (SPEC §1 `authorizationRequested`).
public enum RequestKind: String, Sendable, Hashable, Codable, CaseIterable {
    case whenInUse
    case always
    case temporaryFullAccuracy
}

/// Services whose events need Always authorization and so may trigger the second prompt (E1).
public enum AlwaysService: String, Sendable, Hashable, Codable, CaseIterable {
    case regionMonitoring
    case visits
    case significantChange
    case locationPush
}

/// The app's run state (S1).
public enum AppState: String, Sendable, Hashable, Codable, CaseIterable {
    case foreground
    case background
    case terminated
}

/// The authorization choices of the Settings app (T1).
public enum SettingsAuthorization: String, Sendable, Hashable, Codable, CaseIterable {
    case never
    case askNextTime
    case whileUsing
    case always
    /// Android's "Ask every time" (D7); not a Core Location setting.
    case askEveryTime
}
