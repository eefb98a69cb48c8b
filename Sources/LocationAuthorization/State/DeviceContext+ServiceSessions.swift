/// Where the iOS 18 APIs exist (SPEC §11; `reference/apple-ios18.md`: the availability of
/// `CLServiceSession`, `CLBackgroundActivitySession` and the diagnostics in Apple's headers).
/// An unknown platform is iOS and an unknown version the current one (SPEC §2), so a device
/// that never reported its context has every API.
extension DeviceContext {
    /// `CLServiceSession`: iOS/iPadOS 18+, Mac Catalyst on macOS 15+ (the version reported is
    /// the Mac's), watchOS 11+, tvOS 18+, visionOS 2+; never macOS.
    public var hasServiceSessions: Bool {
        switch effectivePlatform {
        case .iOS, .iPadOS, .tvOS: return atLeast(18)
        case .macCatalyst: return atLeast(15)
        case .watchOS: return atLeast(11)
        case .visionOS: return atLeast(2)
        case .macOS, .android: return false
        }
    }

    /// `CLBackgroundActivitySession`: iOS/iPadOS 17+, Mac Catalyst on macOS 14+, watchOS 10+,
    /// visionOS 1+; never tvOS or macOS.
    public var hasBackgroundActivitySessions: Bool {
        switch effectivePlatform {
        case .iOS, .iPadOS: return atLeast(17)
        case .macCatalyst: return atLeast(14)
        case .watchOS: return atLeast(10)
        case .visionOS: return atLeast(1)
        case .tvOS, .macOS, .android: return false
        }
    }

    /// Whether a diagnostic of this source can arrive: wherever sessions exist, and on macOS 15+
    /// from `liveUpdates` and `monitor`; a background activity's diagnostic needs the session
    /// type as well.
    public func hasDiagnostics(from source: DiagnosticSource) -> Bool {
        switch source {
        case .serviceSession:
            return hasServiceSessions
        case .liveUpdates, .monitor:
            return hasServiceSessions || (effectivePlatform == .macOS && atLeast(15))
        case .backgroundActivity:
            return hasServiceSessions && hasBackgroundActivitySessions
        }
    }

    /// NSLocationRequireExplicitServiceSession; false until reported (SPEC §11).
    public var requiresExplicitServiceSession: Bool { requireExplicitServiceSession ?? false }

    /// `location` in UIBackgroundModes; an unknown context declares every key (SPEC §2, §11).
    public var declaresBackgroundLocationMode: Bool { backgroundLocationMode ?? true }

    private func atLeast(_ major: Int) -> Bool {
        guard let osVersion else { return true }
        return osVersion.major >= major
    }
}
