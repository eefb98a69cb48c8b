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
public final class CacheFollower: Service, Sendable {
    private let service: GateService
    private let logger: Logger
    private let resyncs = Counter(label: "locgate_cache_resyncs_total")

    public init(service: GateService, logger: Logger) {
        self.service = service
        self.logger = logger
    }

    /// True while the caches may answer.
    public var isCaughtUp: Bool { service.coherence.isFollowing }

    public func run() async throws {
        try await cancelWhenGracefulShutdown {
            var pause = Duration.milliseconds(50)
            while !Task.isCancelled {
                let coherence = self.service.coherence
                let notifications = PostgresListener.notifications(
                    configuration: self.service.pool.configuration,
                    channels: [
                        EventLog.notificationChannel, FeatureCatalog.notificationChannel, APIKeys.notificationChannel,
                        GateService.erasureChannel,
                    ],
                    logger: self.logger,
                    onListening: {
                        // From here on every change is notified; what changed before is
                        // unknown, so start from nothing.
                        self.resync()
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

    /// Empties every cache and voids the loads in flight.
    private func resync() {
        resyncs.increment()
        service.cache.removeAll()
        service.features.invalidateAll()
        service.keys.invalidateAll()
        service.changes.publishResync()
        // Notifications may have been missed: the erasure worker looks now.
        service.erasureSignal.raise()
        // Every erasure so far is forgotten here now: say so, for phase 2 of erasure.
        let service = self.service
        let logger = self.logger
        Task {
            do { try await service.heartbeat(resynced: true) } catch {
                logger.warning("could not record the cache resync", metadata: ["error": "\(String(reflecting: error))"])
            }
        }
    }

    private func handle(_ notification: PostgresNotification) {
        switch notification.channel {
        case EventLog.notificationChannel:
            let changes = StreamChange.parse(notification.payload)
            for change in changes {
                service.cache.removeIfOlder(change.stream, than: change.version)
            }
            service.changes.publish(changes)
        case GateService.erasureChannel:
            // Work for the erasure worker: a request ("work"), or a phase 1 done elsewhere
            // whose completion it checks.
            service.erasureSignal.raise()
            // Phase 2 of an erasure: forget its devices here, then acknowledge.
            guard let id = UUID(uuidString: notification.payload) else { return }
            let service = self.service
            let logger = self.logger
            Task {
                do {
                    try await service.acknowledgeErasure(id)
                    // Perhaps the last acknowledgement: the worker looks whether it is done.
                    service.erasureSignal.raise()
                } catch {
                    logger.warning("could not acknowledge an erasure", metadata: ["error": "\(String(reflecting: error))"])
                }
            }
        case FeatureCatalog.notificationChannel:
            if let appID = UUID(uuidString: notification.payload) {
                service.features.invalidate(appID)
                service.changes.publishFeatures(appID: appID)
            } else {
                service.features.invalidateAll()
                service.changes.publishFeatures(appID: nil)
            }
        default:
            // A revocation names the key's hash; anything else (an older server's payload)
            // forgets every key.
            let payload = notification.payload
            if payload.utf8.count == 64, payload.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }) {
                service.keys.forget(digest: payload)
            } else {
                service.keys.invalidateAll()
            }
        }
    }
}
