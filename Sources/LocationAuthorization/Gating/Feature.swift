/// A location feature of an app, as its catalog declares it (SPEC §4, §11).
public struct Feature: Sendable, Hashable {
    public var key: String
    /// The authorization the feature asks for.
    public var requires: Tier
    /// The Core Location services it uses; some force a higher tier or full accuracy.
    public var services: [LocationService]
    public var accuracy: AccuracyNeed
    public var description: String?
    /// Which API delivers its locations: the delegate of `CLLocationManager` (the default) or
    /// `CLLocationUpdate` / `CLMonitor`, whose Always needs a held session (SPEC §11).
    public var delivery: FeatureDelivery
    /// Whether it needs locations while the app is in the background; by default, when it
    /// requires Always (SPEC §11).
    public var background: Bool
    /// The kill switch (SPEC §15): every decision for the feature is off, reason
    /// `disabledByOperator`, whatever the device's authorization.
    public var disabled: Bool
    /// The oldest app version the feature works in (SPEC §15): a device whose latest context
    /// reports a lower `appVersion`, or none, is off with reason `appVersionTooOld`.
    public var minAppVersion: AppVersion?

    public init(
        key: String, requires: Tier, services: [LocationService] = [], accuracy: AccuracyNeed = .any,
        description: String? = nil, delivery: FeatureDelivery = .locationManager, background: Bool? = nil,
        disabled: Bool = false, minAppVersion: AppVersion? = nil
    ) {
        self.key = key
        self.requires = requires
        self.services = services
        self.accuracy = accuracy
        self.description = description
        self.delivery = delivery
        self.background = background ?? (requires == .always)
        self.disabled = disabled
        self.minAppVersion = minAppVersion
    }

    /// The tier the feature needs on a device: Always if it says so or uses location push, or if
    /// it uses significant-change, visits or region monitoring on iOS/iPadOS 12 or earlier (002).
    public func requiredTier(in context: DeviceContext) -> Tier {
        if requires == .always || services.contains(.locationPush) { return .always }
        let alwaysBeforeIOS13: Set<LocationService> = [.significantChange, .visits, .regionMonitoring]
        if context.isIOSFamily(below: OSVersion(13)) && services.contains(where: alwaysBeforeIOS13.contains) {
            return .always
        }
        return .whenInUse
    }

    /// Region monitoring and beacon ranging are not available with reduced accuracy.
    public var needsFullAccuracy: Bool {
        accuracy == .full || services.contains(.regionMonitoring) || services.contains(.beaconRanging)
    }

    /// The first service the platform lacks, if any (SPEC §4; the CLLocationManager header).
    public func unavailableService(on platform: Platform) -> LocationService? {
        services.first { !$0.isAvailable(on: platform) }
    }
}

/// The API a feature's locations come through (SPEC §11 `delivery`).
public enum FeatureDelivery: String, Sendable, Hashable, Codable, CaseIterable {
    /// `CLLocationManager` and its delegate.
    case locationManager
    /// `CLLocationUpdate.liveUpdates` and `CLMonitor`.
    case modern
}

/// The stored and API form: `delivery`, `background`, `disabled` and `minAppVersion` may be left
/// out of a stored definition (one written before they existed) and take their defaults; they
/// are always written, `minAppVersion` as null when there is none (SPEC §15: a GET shows both).
extension Feature: Codable {
    private enum CodingKeys: String, CodingKey {
        case key, requires, services, accuracy, description, delivery, background, disabled, minAppVersion
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            key: try container.decode(String.self, forKey: .key),
            requires: try container.decode(Tier.self, forKey: .requires),
            services: try container.decode([LocationService].self, forKey: .services),
            accuracy: try container.decode(AccuracyNeed.self, forKey: .accuracy),
            description: try container.decodeIfPresent(String.self, forKey: .description),
            delivery: try container.decodeIfPresent(FeatureDelivery.self, forKey: .delivery) ?? .locationManager,
            background: try container.decodeIfPresent(Bool.self, forKey: .background),
            disabled: try container.decodeIfPresent(Bool.self, forKey: .disabled) ?? false,
            minAppVersion: try container.decodeIfPresent(AppVersion.self, forKey: .minAppVersion))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(key, forKey: .key)
        try container.encode(requires, forKey: .requires)
        try container.encode(services, forKey: .services)
        try container.encode(accuracy, forKey: .accuracy)
        try container.encodeIfPresent(description, forKey: .description)
        try container.encode(delivery, forKey: .delivery)
        try container.encode(background, forKey: .background)
        try container.encode(disabled, forKey: .disabled)
        if let minAppVersion {
            try container.encode(minAppVersion, forKey: .minAppVersion)
        } else {
            try container.encodeNil(forKey: .minAppVersion)
        }
    }
}

/// When In Use or Always.
public enum Tier: String, Sendable, Hashable, Codable, CaseIterable {
    case whenInUse
    case always
}

/// Whether a feature works with reduced accuracy.
public enum AccuracyNeed: String, Sendable, Hashable, Codable, CaseIterable {
    case any
    case full
}

/// The Core Location services a feature can use.
public enum LocationService: String, Sendable, Hashable, Codable, CaseIterable {
    case standard
    case significantChange
    case visits
    case regionMonitoring
    case beaconRanging
    case heading
    case geocoding
    case locationPush

    /// watchOS lacks significant-change and region monitoring; tvOS has only a one-time
    /// location and geocoding; location push exists on iOS and iPadOS alone.
    public func isAvailable(on platform: Platform) -> Bool {
        switch (self, platform) {
        case (.locationPush, .android), (.visits, .android), (.significantChange, .android):
            // SPEC §12: Android has no counterpart of these.
            return false
        case (.locationPush, let platform):
            return platform.isIOSFamily
        case (_, .tvOS):
            return self == .standard || self == .geocoding
        case (.significantChange, .watchOS), (.regionMonitoring, .watchOS):
            return false
        default:
            return true
        }
    }
}
