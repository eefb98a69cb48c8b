/// A location feature of an app, as its catalog declares it (SPEC §4).
public struct Feature: Sendable, Hashable, Codable {
    public var key: String
    /// The authorization the feature asks for.
    public var requires: Tier
    /// The Core Location services it uses; some force a higher tier or full accuracy.
    public var services: [LocationService]
    public var accuracy: AccuracyNeed
    public var description: String?

    public init(
        key: String, requires: Tier, services: [LocationService] = [], accuracy: AccuracyNeed = .any,
        description: String? = nil
    ) {
        self.key = key
        self.requires = requires
        self.services = services
        self.accuracy = accuracy
        self.description = description
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
