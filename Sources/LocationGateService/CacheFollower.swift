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
/// features and keys are dropped the same way when another process changes them. If the listen
/// connection is lost, everything cached is dropped, since notifications may have been missed.
public final class CacheFollower: Service, Sendable {
    private let service: GateService
    private let logger: Logger
    private let listening = Mutex(false)

    public init(service: GateService, logger: Logger) {
        self.service = service
        self.logger = logger
    }

    /// True while the notifications are being listened to.
    public var isCaughtUp: Bool { listening.withLock { $0 } }

    public func run() async throws {
        try await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                let notifications = PostgresListener.notifications(
                    configuration: self.service.pool.configuration,
                    channels: [EventLog.notificationChannel, FeatureCatalog.notificationChannel, APIKeys.notificationChannel],
                    logger: self.logger, onListening: { self.listening.withLock { $0 = true } })
                do {
                    for try await notification in notifications {
                        self.handle(notification)
                    }
                } catch {
                    self.logger.warning("change notifications lost; dropping caches until they return")
                }
                self.listening.withLock { $0 = false }
                self.service.cache.removeAll()
                self.service.features.invalidateAll()
                self.service.keys.invalidateAll()
                try? await Task.sleep(for: .seconds(1))
            }
        }
    }

    private func handle(_ notification: PostgresNotification) {
        switch notification.channel {
        case EventLog.notificationChannel:
            for change in StreamChange.parse(notification.payload) {
                service.cache.removeIfOlder(change.stream, than: change.version)
            }
        case FeatureCatalog.notificationChannel:
            if let appID = UUID(uuidString: notification.payload) {
                service.features.invalidate(appID)
            } else {
                service.features.invalidateAll()
            }
        default:
            service.keys.invalidateAll()
        }
    }
}
