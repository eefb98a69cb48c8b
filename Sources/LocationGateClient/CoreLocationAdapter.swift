import Foundation
import LocationAuthorization
#if canImport(CoreLocation)
import CoreLocation
import Synchronization
#endif

// The parts of the adapter that need no Core Location, so that they are tested on Linux: what a
// diagnostic's properties become, which diagnostics are worth a record, and the Info.plist keys
// of the iOS 18 APIs. The Core Location types are read further down, behind
// `#if canImport(CoreLocation)`.

extension LocationAuthorization.Diagnostic {
    /// A diagnostic as Core Location delivered it (SPEC §11): `properties` pairs each Boolean
    /// diagnostic property of Apple's type with its value, under the property's own name
    /// (`DiagnosticFlag` spells them as Apple does). The flags are the properties that are true
    /// and that `source` can carry (`DiagnosticSource.allowedFlags`, the SPEC's table), so
    /// what is built here is what the server accepts; `session` is kept for `serviceSession`
    /// alone.
    public init(_ source: DiagnosticSource, session: String? = nil, properties: KeyValuePairs<DiagnosticFlag, Bool>) {
        var flags = Set<DiagnosticFlag>()
        for (flag, value) in properties where value && source.allowedFlags.contains(flag) {
            flags.insert(flag)
        }
        self.init(source: source, session: source == .serviceSession ? session : nil, flags: flags)
    }
}

/// Which diagnostics are news: a `CLLocationUpdate.liveUpdates` sequence yields updates as often
/// as every second while it runs, each with all its diagnostic properties, and recording each
/// would fill the queue with the same fact. Keep one per loop and record a diagnostic only when
/// `isNew(_:)` says so: the first one of each source (and session), then each whose flags differ
/// from the previous one's, including a change back to none.
public struct DiagnosticChanges: Sendable {
    private struct Origin: Hashable, Sendable {
        var source: DiagnosticSource
        var session: String?
    }

    private var last: [Origin: Set<DiagnosticFlag>] = [:]

    public init() {}

    /// Whether `diagnostic`'s flags differ from those of the last diagnostic of the same source
    /// and session given here (or none was); it becomes the last one either way.
    public mutating func isNew(_ diagnostic: LocationAuthorization.Diagnostic) -> Bool {
        let origin = Origin(source: diagnostic.source, session: diagnostic.session)
        return last.updateValue(diagnostic.flags, forKey: origin) != diagnostic.flags
    }
}

extension DeviceContext {
    /// The Info.plist key that turns implicit service sessions off, as Apple's article on
    /// background updates and WWDC24 spell it, and as the context reports it.
    public static let requireExplicitServiceSessionKey = "NSLocationRequireExplicitServiceSession"
    /// The same key as Apple's SDK headers and its article on suspending authorization requests
    /// spell it. Which spelling Core Location reads is not documented, so either counts.
    public static let requireExplicitServiceSessionHeaderKey = "CLRequireExplicitServiceSession"

    /// The Info.plist keys of the iOS 18 APIs (SPEC §11), read through `value` (a bundle's
    /// `object(forInfoDictionaryKey:)`): `requireExplicitServiceSession` is true when either
    /// spelling of the key holds the Boolean true, and `backgroundLocationMode` when
    /// UIBackgroundModes lists `location`. Both are set, false when the key is absent or of
    /// another type; the other fields are left unknown. `current(bundle:)` reports them.
    public static func serviceSessionKeys(_ value: (String) -> Any?) -> DeviceContext {
        let explicit = [requireExplicitServiceSessionKey, requireExplicitServiceSessionHeaderKey].contains {
            (value($0) as? Bool) == true
        }
        let modes = value(UsageDescriptionKey.backgroundModes) as? [String] ?? []
        return DeviceContext(requireExplicitServiceSession: explicit, backgroundLocationMode: modes.contains("location"))
    }
}

#if canImport(CoreLocation)

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
    /// keys Core Location checks (K1-K3, C1), with NSLocationRequireExplicitServiceSession and
    /// the `location` background mode (`serviceSessionKeys(_:)`, SPEC §11). Report it with
    /// `EventRecorder.launched(context:)` at every launch; the server then applies this OS's
    /// rules and can name missing keys.
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
        let sessions = serviceSessionKeys { bundle.object(forInfoDictionaryKey: $0) }
        let os = ProcessInfo.processInfo.operatingSystemVersion
        return DeviceContext(
            platform: currentPlatform,
            osVersion: OSVersion(os.majorVersion, os.minorVersion, os.patchVersion),
            appVersion: appVersion,
            usageDescriptions: Set(declared),
            temporaryUsagePurposeKeys: Set(purposeKeys),
            defaultAccuracyReduced: reduced,
            requireExplicitServiceSession: sessions.requireExplicitServiceSession,
            backgroundLocationMode: sessions.backgroundLocationMode)
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

// MARK: - iOS 18: service sessions, background activity, diagnostics (SPEC §11)

/// Records with `body`; a failure goes to `onError` (the app may log it), and the Core Location
/// call is made either way.
private func recordReporting(
    _ onError: (@Sendable (EventQueueError) -> Void)?, _ body: () throws(EventQueueError) -> EventSubmission
) {
    do throws(EventQueueError) {
        _ = try body()
    } catch {
        onError?(error)
    }
}

@available(iOS 18.0, macOS 15.0, watchOS 11.0, tvOS 18.0, visionOS 2.0, *)
extension LocationAuthorization.Diagnostic {
    /// The diagnostic properties of an update of `CLLocationUpdate.liveUpdates` (source
    /// `liveUpdates`). Record it when `DiagnosticChanges.isNew(_:)` says it is news, not for every
    /// update.
    public init(_ update: CLLocationUpdate) {
        self.init(
            .liveUpdates,
            properties: [
                .authorizationDenied: update.authorizationDenied,
                .authorizationDeniedGlobally: update.authorizationDeniedGlobally,
                .authorizationRestricted: update.authorizationRestricted,
                .insufficientlyInUse: update.insufficientlyInUse,
                .serviceSessionRequired: update.serviceSessionRequired,
                .authorizationRequestInProgress: update.authorizationRequestInProgress,
                .accuracyLimited: update.accuracyLimited,
                .locationUnavailable: update.locationUnavailable,
                .stationary: update.stationary,
            ])
    }
}

#if os(iOS) || os(macOS)
// CLMonitor exists on iOS, iPadOS, Mac Catalyst and macOS only.
@available(iOS 18.0, macOS 15.0, *)
extension LocationAuthorization.Diagnostic {
    /// The diagnostic properties of an event of `CLMonitor.events` (source `monitor`).
    public init(_ event: CLMonitor.Event) {
        self.init(
            .monitor,
            properties: [
                .authorizationDenied: event.authorizationDenied,
                .authorizationDeniedGlobally: event.authorizationDeniedGlobally,
                .authorizationRestricted: event.authorizationRestricted,
                .insufficientlyInUse: event.insufficientlyInUse,
                .serviceSessionRequired: event.serviceSessionRequired,
                .authorizationRequestInProgress: event.authorizationRequestInProgress,
                .accuracyLimited: event.accuracyLimited,
                .conditionLimitExceeded: event.conditionLimitExceeded,
                .conditionUnsupported: event.conditionUnsupported,
                .persistenceUnavailable: event.persistenceUnavailable,
            ])
    }
}
#endif

#if !os(macOS)
// CLServiceSession and CLBackgroundActivitySession do not exist on macOS (Mac Catalyst has them).

@available(iOS 18.0, watchOS 11.0, tvOS 18.0, visionOS 2.0, *)
extension SessionRequirement {
    /// The requirement a `CLServiceSession` was created with; nil for one newer than this code.
    public init?(_ requirement: CLServiceSession.AuthorizationRequirement) {
        switch requirement {
        // Spelled out: `.none` could be read as Optional's.
        case CLServiceSession.AuthorizationRequirement.none: self = SessionRequirement.none
        case .whenInUse: self = .whenInUse
        #if !os(tvOS)
        case .always: self = .always
        #endif
        @unknown default: return nil
        }
    }
}

@available(iOS 18.0, watchOS 11.0, tvOS 18.0, visionOS 2.0, *)
extension LocationAuthorization.Diagnostic {
    /// A diagnostic of the `CLServiceSession` the app started under `session` (source
    /// `serviceSession`).
    ///
    /// `accuracyLimited` is left out: Apple's documentation lists it on this type only since a
    /// later revision, it is not in the iOS 18.0 SDK, and the SDK that added it is not known, so
    /// reading it would not build with every SDK this package supports. Add
    /// `.accuracyLimited: diagnostic.accuracyLimited` once the oldest supported SDK has it (the
    /// server already accepts it from this source).
    public init(_ diagnostic: CLServiceSession.Diagnostic, session: String) {
        self.init(
            .serviceSession, session: session,
            properties: [
                .authorizationDenied: diagnostic.authorizationDenied,
                .authorizationDeniedGlobally: diagnostic.authorizationDeniedGlobally,
                .authorizationRestricted: diagnostic.authorizationRestricted,
                .insufficientlyInUse: diagnostic.insufficientlyInUse,
                .serviceSessionRequired: diagnostic.serviceSessionRequired,
                .fullAccuracyDenied: diagnostic.fullAccuracyDenied,
                .alwaysAuthorizationDenied: diagnostic.alwaysAuthorizationDenied,
                .authorizationRequestInProgress: diagnostic.authorizationRequestInProgress,
            ])
    }
}

/// A `CLServiceSession` whose life the server hears of (SPEC §11, V1-V4): `sessionStarted` is
/// recorded, then the session created; every diagnostic Core Location yields for it is recorded
/// as `diagnosticObserved` (source `serviceSession`, this key); `invalidate()` ends the session
/// and records `sessionInvalidated`.
///
/// Create it where the app would create the `CLServiceSession`: in the foreground, when the
/// person starts the feature that needs the authorization, and at once at launch when the app
/// held it before it was terminated (Core Location keeps a session for a few seconds after a
/// relaunch, and the server likewise, V1). Keep it for as long as the feature runs; releasing it
/// ends the session as `invalidate()` does. Diagnostics are recorded as they come: Core Location
/// yields one when something changes, not continually.
@available(iOS 18.0, watchOS 11.0, tvOS 18.0, visionOS 2.0, *)
public final class RecordedServiceSession: Sendable {
    /// The app's key for the session (1 to 64 of `[A-Za-z0-9._-]`), the same at every launch.
    public let key: String
    /// The Core Location session. End it with this object's `invalidate()`, not its own, so that
    /// the server hears of it.
    public let session: CLServiceSession
    private let recorder: EventRecorder
    /// The requirement could be recorded (it is not newer than this code).
    private let recorded: Bool
    private let onRecordingError: (@Sendable (EventQueueError) -> Void)?
    private let forwarding: Task<Void, Never>
    private let ended = Atomic<Bool>(false)

    /// Records `sessionStarted(key, requirement:fullAccuracyPurposeKey:)`, then creates
    /// `CLServiceSession(authorization:)`, or `init(authorization:fullAccuracyPurposeKey:)` with
    /// a purpose key (a key of NSLocationTemporaryUsageDescriptionDictionary).
    ///
    /// - Parameter onRecordingError: told when an event could not be recorded (`.full` above
    ///   all); the session is created and kept either way.
    public init(
        _ key: String, authorization: CLServiceSession.AuthorizationRequirement, fullAccuracyPurposeKey: String? = nil,
        recorder: EventRecorder, onRecordingError: (@Sendable (EventQueueError) -> Void)? = nil
    ) {
        let requirement = SessionRequirement(authorization)
        if let requirement {
            recordReporting(onRecordingError) { () throws(EventQueueError) in
                try recorder.sessionStarted(key, requirement: requirement, fullAccuracyPurposeKey: fullAccuracyPurposeKey)
            }
        }
        let session =
            if let fullAccuracyPurposeKey {
                CLServiceSession(authorization: authorization, fullAccuracyPurposeKey: fullAccuracyPurposeKey)
            } else {
                CLServiceSession(authorization: authorization)
            }
        self.key = key
        self.session = session
        self.recorder = recorder
        self.recorded = requirement != nil
        self.onRecordingError = onRecordingError
        // Captures the session, not this object, so that releasing this object ends both.
        self.forwarding = Task {
            do {
                for try await diagnostic in session.diagnostics {
                    let observed = LocationAuthorization.Diagnostic(diagnostic, session: key)
                    recordReporting(onRecordingError) { () throws(EventQueueError) in
                        try recorder.diagnostic(observed.source, session: observed.session, flags: observed.flags)
                    }
                }
            } catch {
                // The sequence ended (cancelled by `invalidate()`, or by Core Location): nothing
                // more to forward.
            }
        }
    }

    /// Stops forwarding diagnostics, invalidates the Core Location session and records
    /// `sessionInvalidated`. Later calls do nothing.
    public func invalidate() {
        guard ended.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else { return }
        forwarding.cancel()
        session.invalidate()
        guard recorded else { return }
        recordReporting(onRecordingError) { () throws(EventQueueError) in
            try recorder.sessionInvalidated(key)
        }
    }

    deinit {
        invalidate()
    }
}

#if !os(tvOS)
// CLBackgroundActivitySession does not exist on tvOS either.

@available(iOS 18.0, watchOS 11.0, visionOS 2.0, *)
extension LocationAuthorization.Diagnostic {
    /// A diagnostic of a `CLBackgroundActivitySession` (source `backgroundActivity`).
    public init(_ diagnostic: CLBackgroundActivitySession.Diagnostic) {
        self.init(
            .backgroundActivity,
            properties: [
                .authorizationDenied: diagnostic.authorizationDenied,
                .authorizationDeniedGlobally: diagnostic.authorizationDeniedGlobally,
                .authorizationRestricted: diagnostic.authorizationRestricted,
                .insufficientlyInUse: diagnostic.insufficientlyInUse,
                .serviceSessionRequired: diagnostic.serviceSessionRequired,
                .authorizationRequestInProgress: diagnostic.authorizationRequestInProgress,
            ])
    }
}

/// A `CLBackgroundActivitySession` whose life the server hears of (SPEC §11, V5):
/// `backgroundActivity(active: true)` is recorded, then the session created; its diagnostics are
/// recorded (source `backgroundActivity`); `invalidate()` ends it and records
/// `backgroundActivity(active: false)`.
///
/// Create it in the foreground when the person starts what must go on in the background (the
/// app needs `location` in UIBackgroundModes), and at once at launch when one was active before
/// the app was terminated. Call `invalidate()` when it is done; releasing this object invalidates
/// the session too (a released session that was never invalidated stays active, and has been
/// reported to crash the app at its next launch).
@available(iOS 18.0, watchOS 11.0, visionOS 2.0, *)
public final class RecordedBackgroundActivitySession: Sendable {
    /// The Core Location session. End it with this object's `invalidate()`, not its own.
    public let session: CLBackgroundActivitySession
    private let recorder: EventRecorder
    private let onRecordingError: (@Sendable (EventQueueError) -> Void)?
    private let forwarding: Task<Void, Never>
    private let ended = Atomic<Bool>(false)

    /// Records `backgroundActivity(active: true)`, then creates the session.
    ///
    /// - Parameter onRecordingError: told when an event could not be recorded; the session is
    ///   created and kept either way.
    public init(recorder: EventRecorder, onRecordingError: (@Sendable (EventQueueError) -> Void)? = nil) {
        recordReporting(onRecordingError) { () throws(EventQueueError) in
            try recorder.backgroundActivity(active: true)
        }
        let session = CLBackgroundActivitySession()
        self.session = session
        self.recorder = recorder
        self.onRecordingError = onRecordingError
        self.forwarding = Task {
            do {
                for try await diagnostic in session.diagnostics {
                    let observed = LocationAuthorization.Diagnostic(diagnostic)
                    recordReporting(onRecordingError) { () throws(EventQueueError) in
                        try recorder.diagnostic(observed.source, flags: observed.flags)
                    }
                }
            } catch {
                // The sequence ended: nothing more to forward.
            }
        }
    }

    /// Stops forwarding diagnostics, invalidates the Core Location session and records
    /// `backgroundActivity(active: false)`. Later calls do nothing.
    public func invalidate() {
        guard ended.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else { return }
        forwarding.cancel()
        session.invalidate()
        recordReporting(onRecordingError) { () throws(EventQueueError) in
            try recorder.backgroundActivity(active: false)
        }
    }

    deinit {
        invalidate()
    }
}
#endif
#endif
#endif
