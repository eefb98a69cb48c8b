import EventLog
import Foundation
import LocationAuthorization
import LocationGateJSON
import PostgresClient

/// One message of an app's change feed (`GET /v1/changes`): a committed event, at its place
/// in the log's global order.
public struct ChangeMessage: Sendable, Hashable {
    public var position: LogPosition
    public var userId: String
    public var deviceId: String
    public var version: Int64
    /// The status after the event.
    public var status: AuthorizationStatus
    /// The effective accuracy after the event (full while temporary full accuracy lasts), as
    /// history's `after` and the gates' `accuracy` give it.
    public var accuracy: Accuracy

    public init(
        position: LogPosition, userId: String, deviceId: String, version: Int64, status: AuthorizationStatus, accuracy: Accuracy
    ) {
        self.position = position
        self.userId = userId
        self.deviceId = deviceId
        self.version = version
        self.status = status
        self.accuracy = accuracy
    }

    /// `{"userId", "deviceId", "version", "status", "accuracy"}`, keys in byte order.
    public var json: String {
        var writer = JSONWriter(capacity: 112)
        writer.objectStart()
        writer.field("accuracy", accuracy)
        writer.field("deviceId", deviceId)
        writer.field("status", status)
        writer.field("userId", userId)
        writer.field("version", Int(version))
        writer.objectEnd()
        return writer.text
    }
}

/// The push streams' side of the service: the change feed of an app's committed events (SPEC
/// §5 `GET /v1/changes`) and the hints that wake its readers and OFREP's event streams
/// (`ChangeHints`). The HTTP layer sees it as `ChangeFeedReading` and `ChangeHints`.
public final class PushCapability: Sendable, DatabaseCalls {
    let pool: PostgresConnectionPool
    let log: EventLog
    /// Change hints for the push streams, fed by the `CacheFollower` and this process's own
    /// appends and erasures; `ChangeTicker` wakes the streams that poll.
    public let hub: ChangeHub
    let coherence: CacheCoherence

    init(pool: PostgresConnectionPool, log: EventLog, hub: ChangeHub, coherence: CacheCoherence) {
        self.pool = pool
        self.log = log
        self.hub = hub
        self.coherence = coherence
    }

    /// The app's committed events after `position`, in global order, as feed messages.
    public func changes(appID: UUID, after position: LogPosition, limit: Int) async throws(ServiceError) -> [ChangeMessage] {
        let events = try await database { try await log.read(appID: appID, after: position, limit: limit) }
        return try events.map { event throws(ServiceError) in
            guard let text = event.outcome, let outcome = try? JSONText.outcome(text) else {
                throw ServiceError(.internalError, "event \(event.logPosition) has no readable outcome")
            }
            return ChangeMessage(
                position: event.logPosition, userId: event.stream.userID, deviceId: event.stream.deviceID,
                version: event.version, status: outcome.after.status, accuracy: outcome.after.accuracy)
        }
    }

    /// Where a feed that starts now begins.
    public func feedHead() async throws(ServiceError) -> LogPosition {
        try await database { try await log.head() }
    }

    /// The connections of the primary's pool, which the push streams' share
    /// (`StreamReads.defaultLimit`) is a part of.
    public var databaseConnections: Int { pool.size }

    /// Whether caches may answer now; push streams poll the database while they may not.
    public var cachesFollowing: Bool { coherence.isFollowing }
}
