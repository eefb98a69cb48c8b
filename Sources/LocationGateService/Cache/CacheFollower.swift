import EventLog
import Foundation
import LocationAuthorization
import Logging
import Metrics
import PostgresClient
import ServiceLifecycle
import Synchronization

/// Keeps this process's caches coherent with changes made by other processes on the same
/// database. Every append NOTIFYs the streams it moved when it commits; a cached device older
/// than that is dropped, and the next gate loads the committed state from `device_states`. Cached
/// features and keys are dropped the same way when another process changes them.
///
/// Notifications are hints, not the source of truth: they are lost with their connection. So
/// - every time LISTEN is (re)established, every cache is emptied and every load in flight is
///   voided (epochs) before the caches are trusted again: the resync;
/// - the listener sends a heartbeat every 250 ms, and the caches are trusted only while one
///   was answered within the last 900 ms (`CacheCoherence`): a connection that died silently
///   stops the caches within that bound;
/// - while the caches are not trusted, every gate, feature and key is read from PostgreSQL
///   (the polling fallback), so no answer is older than SPEC §5's bound of one second.
///
/// The follower owns the connection and its heartbeat; what a notification does is its
/// channel's (`ChangeChannel`): `DeviceCacheInvalidation` (an append's streams: the device
/// cache and the push streams' hub), `FeatureCacheInvalidation`, `KeyCacheInvalidation`,
/// `ErasureNotification`, and `CacheResync` on every (re)connection.
public final class CacheFollower: Service, Sendable {
    private let service: GateService
    private let logger: Logger
    /// What each channel's notifications do (`ChangeChannel`), and what a (re)connection does.
    private let devices: DeviceCacheInvalidation
    private let features: FeatureCacheInvalidation
    private let keys: KeyCacheInvalidation
    private let erasures: ErasureNotification
    private let resync: CacheResync

    public init(service: GateService, logger: Logger) {
        self.service = service
        self.logger = logger
        self.devices = DeviceCacheInvalidation(cache: service.cache, hub: service.hub, origin: service.appendOrigin)
        self.features = FeatureCacheInvalidation(features: service.features, hub: service.hub)
        self.keys = KeyCacheInvalidation(keys: service.keys)
        self.erasures = ErasureNotification(service: service, logger: logger)
        self.resync = CacheResync(service: service, logger: logger)
    }

    /// True while the caches may answer.
    public var isCaughtUp: Bool { service.coherence.isFollowing }

    public func run() async throws {
        try await cancelWhenGracefulShutdown {
            var pause = Duration.milliseconds(50)
            while !Task.isCancelled {
                let coherence = self.service.coherence
                let resync = self.resync
                let notifications = PostgresListener.notifications(
                    configuration: self.service.pool.configuration,
                    channels: ChangeChannel.allCases.map(\.name),
                    logger: self.logger,
                    // This service's own appends, dropped as they arrive (`DeviceCacheInvalidation`).
                    ignoring: self.devices.ownAppends,
                    onListening: {
                        // From here on every change is notified; what changed before is
                        // unknown, so start from nothing.
                        resync.run()
                        coherence.markAlive()
                    },
                    onAlive: { coherence.markAlive() })
                let started = ContinuousClock.now
                do {
                    for try await notification in notifications {
                        self.handle(notification)
                    }
                } catch {
                    self.logger.warning("change notifications lost; reading through to PostgreSQL until they return")
                }
                coherence.markLost()
                // Reconnect at once after a connection that lasted; back off while it keeps failing.
                if ContinuousClock.now - started > .seconds(5) { pause = .milliseconds(50) }
                try? await Task.sleep(for: pause)
                pause = min(pause * 2, .seconds(1))
            }
            self.service.coherence.markLost()
        }
    }

    /// Hands a notification to its channel's handler; one of a channel this process does not
    /// follow (none arrives: only the channels of `ChangeChannel` are listened to) is ignored.
    private func handle(_ notification: PostgresNotification) {
        guard let channel = ChangeChannel(name: notification.channel) else { return }
        switch channel {
        case .streams: devices.apply(notification.payload)
        case .features: features.apply(notification.payload)
        case .keys: keys.apply(notification.payload)
        case .erasures: erasures.apply(notification.payload)
        }
    }
}
