#if canImport(CoreLocation)
import CoreLocation
import Foundation
import LocationAuthorization

/// A `CLLocationManagerDelegate` that records every authorization change the device reports
/// (`statusObserved`, O1), then forwards everything to the app's own delegate, if any.
///
/// Set it as the manager's delegate and keep a strong reference to it (the manager's is weak).
/// Make requests through `requestWhenInUse(_:)` and its siblings, which record the request
/// before making it, so that the server sees the request, then the status it led to.
public final class LocationGateDelegate: NSObject, CLLocationManagerDelegate {
    public let recorder: EventRecorder
    /// The app's own delegate; every callback is forwarded to it (weakly held, as Core Location
    /// holds delegates).
    public weak var forwardingDelegate: (any CLLocationManagerDelegate)?
    /// Told when an event could not be recorded (`.full` above all); the app may log it. The
    /// Core Location call is made either way.
    public var onRecordingError: (@Sendable (EventQueueError) -> Void)?

    public init(recorder: EventRecorder, forwardingTo forwardingDelegate: (any CLLocationManagerDelegate)? = nil) {
        self.recorder = recorder
        self.forwardingDelegate = forwardingDelegate
        super.init()
    }

    public func locationManagerDidChangeAuthorization(_ manager: CLLocationManager) {
        if let status = AuthorizationStatus(manager.authorizationStatus) {
            report { () throws(EventQueueError) in
                try recorder.observed(status: status, accuracy: Accuracy(manager.accuracyAuthorization))
            }
        }
        forwardingDelegate?.locationManagerDidChangeAuthorization?(manager)
    }

    /// Records `authorizationRequested(whenInUse)`, then calls `requestWhenInUseAuthorization()`.
    public func requestWhenInUse(_ manager: CLLocationManager) {
        report { () throws(EventQueueError) in try recorder.requested(.whenInUse) }
        manager.requestWhenInUseAuthorization()
    }

    #if !os(tvOS)
    /// Records `authorizationRequested(always)`, then calls `requestAlwaysAuthorization()`.
    public func requestAlways(_ manager: CLLocationManager) {
        report { () throws(EventQueueError) in try recorder.requested(.always) }
        manager.requestAlwaysAuthorization()
    }

    /// Records `authorizationRequested(temporaryFullAccuracy)`, then calls
    /// `requestTemporaryFullAccuracyAuthorization(withPurposeKey:)`.
    public func requestTemporaryFullAccuracy(_ manager: CLLocationManager, purposeKey: String) {
        report { () throws(EventQueueError) in try recorder.requested(.temporaryFullAccuracy, purposeKey: purposeKey) }
        manager.requestTemporaryFullAccuracyAuthorization(withPurposeKey: purposeKey)
    }
    #endif

    private func report(_ body: () throws(EventQueueError) -> EventSubmission) {
        do throws(EventQueueError) {
            _ = try body()
        } catch {
            onRecordingError?(error)
        }
    }

    // The app's delegate receives every other callback (locations, errors, regions) unchanged.

    public override func responds(to selector: Selector!) -> Bool {
        super.responds(to: selector) || (forwardingDelegate?.responds(to: selector) ?? false)
    }

    public override func forwardingTarget(for selector: Selector!) -> Any? {
        if let forwardingDelegate, forwardingDelegate.responds(to: selector) {
            return forwardingDelegate
        }
        return super.forwardingTarget(for: selector)
    }
}

extension AuthorizationStatus {
    /// The status Core Location reports; nil for a status newer than this code.
    public init?(_ status: CLAuthorizationStatus) {
        switch status {
        case .notDetermined: self = .notDetermined
        case .restricted: self = .restricted
        case .denied: self = .denied
        case .authorizedAlways: self = .authorizedAlways
        case .authorizedWhenInUse: self = .authorizedWhenInUse
        @unknown default: return nil
        }
    }
}

extension Accuracy {
    /// The accuracy Core Location reports; nil for one newer than this code.
    public init?(_ accuracy: CLAccuracyAuthorization) {
        switch accuracy {
        case .fullAccuracy: self = .full
        case .reducedAccuracy: self = .reduced
        @unknown default: return nil
        }
    }
}

extension DeviceContext {
    /// This device and build: the platform, the OS version, the app version and the Info.plist
    /// keys Core Location checks (K1-K3, C1). Report it with `EventRecorder.launched(context:)`
    /// at every launch; the server then applies this OS's rules and can name missing keys.
    ///
    /// Keys outside what the server accepts (SPEC §1: 1 to 128 of `[A-Za-z0-9._-]`, at most 64)
    /// are left out rather than sent to be refused.
    public static func current(bundle: Bundle = .main) -> DeviceContext {
        let declared = UsageDescriptionKey.all.filter { bundle.object(forInfoDictionaryKey: $0) != nil }
        let purposes = bundle.object(forInfoDictionaryKey: "NSLocationTemporaryUsageDescriptionDictionary") as? [String: Any] ?? [:]
        let purposeKeys = purposes.keys.filter(Self.isReportableKey).sorted().prefix(64)
        let reduced = bundle.object(forInfoDictionaryKey: "NSLocationDefaultAccuracyReduced") as? Bool ?? false
        var appVersion = bundle.object(forInfoDictionaryKey: "CFBundleShortVersionString") as? String
        if let version = appVersion, !Self.isReportableVersion(version) {
            appVersion = nil
        }
        let os = ProcessInfo.processInfo.operatingSystemVersion
        return DeviceContext(
            platform: currentPlatform,
            osVersion: OSVersion(os.majorVersion, os.minorVersion, os.patchVersion),
            appVersion: appVersion,
            usageDescriptions: Set(declared),
            temporaryUsagePurposeKeys: Set(purposeKeys),
            defaultAccuracyReduced: reduced)
    }

    /// The platform this code runs on. iPadOS reports as iOS: its rules are iOS's (SPEC §2), and
    /// telling them apart needs UIKit on the main actor.
    public static var currentPlatform: Platform {
        #if targetEnvironment(macCatalyst)
        return .macCatalyst
        #elseif os(visionOS)
        return .visionOS
        #elseif os(iOS)
        return .iOS
        #elseif os(watchOS)
        return .watchOS
        #elseif os(tvOS)
        return .tvOS
        #else
        return .macOS
        #endif
    }

    /// SPEC §1: `appVersion` is 1 to 64 bytes with no control characters (the server's own check).
    private static func isReportableVersion(_ version: String) -> Bool {
        (try? ClientText.check(version, field: "appVersion", bytes: 1...64)) != nil
    }

    /// SPEC §1: keys are 1 to 128 bytes of `[A-Za-z0-9._-]` (the server's own check).
    private static func isReportableKey(_ key: String) -> Bool {
        (try? ClientText.checkKey(key, field: "key")) != nil
    }
}
#endif
