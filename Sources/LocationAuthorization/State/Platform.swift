/// The Apple platform a device runs. Core Location's rules differ per platform (SPEC §2-§4):
/// tvOS has no Always, visionOS turns Always into When In Use (A9), macOS has no When In Use (M1).
public enum Platform: String, Sendable, Hashable, Codable, CaseIterable {
    case iOS
    case iPadOS
    case macOS
    case macCatalyst
    case watchOS
    case tvOS
    case visionOS
    /// Android (SPEC §12): its own rules, not Core Location's.
    case android

    /// The rules' family: Core Location's for every Apple platform, Android's for Android.
    public var family: PlatformFamily {
        switch self {
        case .iOS, .iPadOS, .macOS, .macCatalyst, .watchOS, .tvOS, .visionOS: .apple
        case .android: .android
        }
    }

    /// OS-version thresholds (A3, A10, A11, K2, the iOS 12 services of §4) apply only here.
    public var isIOSFamily: Bool { self == .iOS || self == .iPadOS }

    /// When In Use and Always are functionally the same on the Mac (002), which the gate honours.
    public var isMac: Bool { self == .macOS || self == .macCatalyst }
}

/// A dotted OS version such as "17.4" or "13.3.1". Only the first two components matter to the
/// rules; the third is kept so the value round-trips.
public struct OSVersion: Sendable, Hashable, Comparable, CustomStringConvertible {
    public var major: Int
    public var minor: Int
    public var patch: Int

    public init(_ major: Int, _ minor: Int = 0, _ patch: Int = 0) {
        self.major = major
        self.minor = minor
        self.patch = patch
    }

    /// Parses "17", "17.4" or "17.4.1"; anything else is nil.
    public init?(_ text: String) {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...3).contains(parts.count), text.count <= 32 else { return nil }
        var numbers: [Int] = []
        for part in parts {
            guard (1...4).contains(part.utf8.count), part.utf8.allSatisfy({ (0x30...0x39).contains($0) }), let value = Int(part) else {
                return nil
            }
            numbers.append(value)
        }
        self.init(numbers[0], numbers.count > 1 ? numbers[1] : 0, numbers.count > 2 ? numbers[2] : 0)
    }

    public var description: String {
        patch == 0 ? "\(major).\(minor)" : "\(major).\(minor).\(patch)"
    }

    public static func < (lhs: OSVersion, rhs: OSVersion) -> Bool {
        (lhs.major, lhs.minor, lhs.patch) < (rhs.major, rhs.minor, rhs.patch)
    }
}
