import EventLog
import Foundation
import LocationAuthorization
import Logging
import Metrics
import PostgresClient
import ServiceLifecycle
import Synchronization

/// Keeps this process's caches coherent with appends made by other processes on the same
/// database: follows the global log (LISTEN/NOTIFY, polling as fallback) and folds each event
/// onto the cached device state, and drops cached features and keys when another process
/// changes them.
public final class CacheFollower: Service, Sendable {
    private let service: GateService
    private let logger: Logger
    private let pollInterval: Duration
    private let state = Mutex<(started: Bool, lastRead: ContinuousClock.Instant?)>((false, nil))

    public init(service: GateService, pollInterval: Duration = .milliseconds(500), logger: Logger) {
        self.service = service
        self.pollInterval = pollInterval
        self.logger = logger
    }

    /// True once the follower listens and has read the log up to its end once.
    public var isCaughtUp: Bool { state.withLock { $0.started } }

    public func run() async throws {
        try await cancelWhenGracefulShutdown {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await self.followLog() }
                group.addTask { await self.followInvalidations() }
                try await group.next()
                group.cancelAll()
            }
        }
    }

    private func followLog() async throws {
        let start = try await currentEnd()
        let subscription = service.log.subscribe(from: start, pollInterval: pollInterval)
        await subscription.startListening()
        state.withLock { $0.started = true }
        logger.info("following the event log", metadata: ["from": "\(start)"])
        for try await recorded in subscription {
            if let event = GateService.decode(recorded) {
                service.cache.apply(recorded.stream, version: recorded.version, event: event)
            } else {
                service.cache.remove(recorded.stream)
            }
        }
    }

    private func followInvalidations() async {
        while !Task.isCancelled {
            let notifications = PostgresListener.notifications(
                configuration: service.pool.configuration,
                channels: [FeatureCatalog.notificationChannel, APIKeys.notificationChannel], logger: logger)
            do {
                for try await notification in notifications {
                    if notification.channel == FeatureCatalog.notificationChannel, let appID = UUID(uuidString: notification.payload) {
                        service.features.invalidate(appID)
                    } else {
                        service.keys.invalidateAll()
                    }
                }
            } catch {
                logger.warning("invalidation notifications lost; dropping caches")
            }
            service.features.invalidateAll()
            service.keys.invalidateAll()
            try? await Task.sleep(for: .seconds(1))
        }
    }

    /// The last readable position of the log: everything appended later sorts after it.
    private func currentEnd() async throws -> LogPosition {
        try await service.pool.withConnection { connection in
            let rows = try connection.query(
                """
                SELECT tx_id::text, position FROM events
                WHERE tx_id < pg_snapshot_xmin(pg_current_snapshot())
                ORDER BY events.tx_id DESC, events.position DESC LIMIT 1
                """)
            guard let row = rows.first else { return LogPosition.start }
            return LogPosition(transactionID: try row.decode(0), position: try row.decode(1))
        }
    }
}
