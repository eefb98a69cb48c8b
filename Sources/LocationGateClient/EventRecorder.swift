import Foundation
import LocationAuthorization

/// Turns what an app can observe about Core Location authorization into events of one stream
/// (one user's device, SPEC §1) and queues them durably.
///
/// Each event gets a fresh UUID when it is recorded, not when it is sent: the id is the
/// idempotency key, so however often a crash or a lost answer makes the sender retry, the
/// server stores the event once. Every method has returned only once the event is on disk.
///
/// The methods are synchronous and safe to call from any thread, including a
/// `CLLocationManagerDelegate` callback; each costs one fsync. They throw what the queue throws:
/// `.full` means stop recording until the sender has drained it (see `EventQueueError.full`).
public final class EventRecorder: Sendable {
    /// The app's opaque id of the person (1 to 128 of `[A-Za-z0-9._:@-]`).
    public let userId: String
    /// The app's opaque id of this device, such as `identifierForVendor` (same bounds). It may
    /// outlive a reinstall; the install id (`EventQueue.installId`) does not.
    public let deviceId: String
    public let queue: EventQueue
    private let clock: @Sendable () -> Date

    /// - Parameter clock: gives each event's `occurredAt`; tests pass a fixed one.
    public init(userId: String, deviceId: String, queue: EventQueue, clock: @escaping @Sendable () -> Date = { Date() }) {
        self.userId = userId
        self.deviceId = deviceId
        self.queue = queue
        self.clock = clock
    }

    /// The app launched or was updated: the device's platform, OS version and the build's
    /// Info.plist keys (C1). Report it at every launch, before any request, so that the server
    /// applies the rules of this OS and knows which usage descriptions are missing (K1-K3).
    ///
    /// The queue adds the installation's id (`EventQueue.installId`, I1) to the event's `data`:
    /// a reinstall resets Core Location's authorization, and the new id tells the server so
    /// even when `deviceId` stays the same.
    @discardableResult
    public func launched(context: DeviceContext) throws(EventQueueError) -> EventSubmission {
        try record(.contextReported(context))
    }

    /// The app is about to call `requestWhenInUseAuthorization()`, `requestAlwaysAuthorization()`
    /// or `requestTemporaryFullAccuracyAuthorization(withPurposeKey:)` (A rules). Record it
    /// before the call, so that the request precedes the status change it causes.
    @discardableResult
    public func requested(_ kind: RequestKind, purposeKey: String? = nil) throws(EventQueueError) -> EventSubmission {
        let request = AuthorizationRequest(kind, purposeKey: kind == .temporaryFullAccuracy ? purposeKey : nil)
        return try record(.authorizationRequested(request))
    }

    /// `locationManagerDidChangeAuthorization(_:)` reported this status and accuracy. The device
    /// is the truth (O1): whatever the server inferred is reconciled with it.
    @discardableResult
    public func observed(status: AuthorizationStatus, accuracy: Accuracy? = nil) throws(EventQueueError) -> EventSubmission {
        try record(.statusObserved(status, accuracy: accuracy))
    }

    /// The app entered the foreground or the background, or is terminating (S1).
    /// `backgroundIndicator` is whether the location indicator shows in the background, which
    /// keeps a When In Use app in use.
    @discardableResult
    public func appState(_ state: AppState, backgroundIndicator: Bool = false) throws(EventQueueError) -> EventSubmission {
        try record(.appStateChanged(state, backgroundIndicator: backgroundIndicator))
    }

    /// The app created a `CLServiceSession` (iOS 18 and later, V1). `key` is the app's own name
    /// for the workflow the session serves (1 to 64 of `[A-Za-z0-9._-]`), the same at every
    /// launch: a session re-created under its key right after a relaunch is the re-take Core
    /// Location expects, and layered sessions keep apart. `fullAccuracyPurposeKey` is the one
    /// given to `init(authorization:fullAccuracyPurposeKey:)`. Record it before creating the
    /// session, so that the server sees the goal before the prompt Core Location may show for it
    /// (`RecordedServiceSession` does both). A key out of bounds throws `.invalidEvent`.
    @discardableResult
    public func sessionStarted(
        _ key: String, requirement: SessionRequirement, fullAccuracyPurposeKey: String? = nil
    ) throws(EventQueueError) -> EventSubmission {
        try record(.serviceSessionChanged(.started(key, requirement, fullAccuracyPurposeKey: fullAccuracyPurposeKey)))
    }

    /// The app called `invalidate()` on the `CLServiceSession` it started under `key`, or
    /// released it: the session ends, and Core Location no longer acts on its goal.
    @discardableResult
    public func sessionInvalidated(_ key: String) throws(EventQueueError) -> EventSubmission {
        try record(.serviceSessionChanged(.invalidated(key)))
    }

    /// The app created (`true`) or invalidated (`false`) a `CLBackgroundActivitySession` (V5),
    /// which keeps a When In Use app in use in the background. Record `true` before creating the
    /// session (`RecordedBackgroundActivitySession` does both).
    @discardableResult
    public func backgroundActivity(active: Bool) throws(EventQueueError) -> EventSubmission {
        try record(.backgroundActivityChanged(active: active))
    }

    /// A diagnostic arrived from a service session (`session`: the key it was started under),
    /// a `CLLocationUpdate.liveUpdates` sequence, a `CLMonitor` or a background activity session
    /// (V4). `flags` are the diagnostic properties that were true; an empty set says all were
    /// false, which is news too (a restriction lifted, Location Services back on).
    ///
    /// Only what the source's Apple type has is sent, as the server requires: flags outside
    /// `source.allowedFlags` are left out, and so is `session` for any source other than
    /// `serviceSession`, which needs it (without it: `.invalidEvent`). The adapter's
    /// `Diagnostic` initializers read the flags from Core Location's types
    /// (`Diagnostic(update)` for a `CLLocationUpdate`).
    @discardableResult
    public func diagnostic(
        _ source: DiagnosticSource, session: String? = nil, flags: Set<DiagnosticFlag>
    ) throws(EventQueueError) -> EventSubmission {
        let diagnostic = Diagnostic(
            source: source, session: source == .serviceSession ? session : nil, flags: flags.intersection(source.allowedFlags))
        return try record(.diagnosticObserved(diagnostic))
    }

    /// Any other event, such as a prompt answer the app learned of, or a Settings change.
    /// `expectedVersion` is for apps that track the stream's version (a conflict is refused
    /// and reported by the sender, not retried).
    @discardableResult
    public func record(_ event: LocationEvent, expectedVersion: Int64? = nil) throws(EventQueueError) -> EventSubmission {
        let submission = EventSubmission(
            id: UUID(), userId: userId, deviceId: deviceId, occurredAt: clock(), event: event,
            expectedVersion: expectedVersion)
        return try queue.append(submission)
    }
}
