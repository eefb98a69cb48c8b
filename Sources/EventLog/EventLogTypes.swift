import Foundation
import PostgresClient

/// One device of one user of one app (SPEC §1).
public struct StreamKey: Sendable, Hashable, Comparable, CustomStringConvertible {
    public var appID: UUID
    public var userID: String
    public var deviceID: String

    public init(appID: UUID, userID: String, deviceID: String) {
        self.appID = appID
        self.userID = userID
        self.deviceID = deviceID
    }

    public static func < (lhs: StreamKey, rhs: StreamKey) -> Bool {
        (lhs.appID.lowercasedText, lhs.userID, lhs.deviceID) < (rhs.appID.lowercasedText, rhs.userID, rhs.deviceID)
    }

    public var description: String { "\(appID.lowercasedText)/\(userID)/\(deviceID)" }

    /// The stream's advisory-lock key: FNV-1a over app, user and device. A collision only makes
    /// two streams take turns.
    var lockKey: Int64 {
        Int64(bitPattern: FNV1a.hash(appID.uppercasedText.utf8.lazy + [0] + userID.utf8 + [0] + deviceID.utf8))
    }

    /// The person's lock key (`EventLog.userLockKey`).
    var userLockKey: Int64 { EventLog.userLockKey(appID: appID, userID: userID) }
}

/// An event to append. The log is domain-free: `type` and `data` are stored as given.
public struct NewEvent: Sendable, Hashable {
    /// The client's idempotency key.
    public var id: UUID
    public var userID: String
    public var deviceID: String
    public var type: String
    /// The event's `data` as JSON text.
    public var data: String
    public var occurredAt: Date
    /// The stream's version before this event; nil skips the check.
    public var expectedVersion: Int64?

    public init(
        id: UUID, userID: String, deviceID: String, type: String, data: String, occurredAt: Date,
        expectedVersion: Int64? = nil
    ) {
        self.id = id
        self.userID = userID
        self.deviceID = deviceID
        self.type = type
        self.data = data
        self.occurredAt = occurredAt
        self.expectedVersion = expectedVersion
    }
}

/// The result of one event of a batch, in batch order.
public struct AppendResult: Sendable, Hashable {
    public var id: UUID
    public var userID: String
    public var deviceID: String
    public var version: Int64
    /// The outcome stored with the event (the projection's JSON), also for a duplicate.
    public var outcome: String?
    /// True when the id was already stored: nothing was appended.
    public var duplicate: Bool
}

/// An event as stored.
public struct RecordedEvent: Sendable, Hashable {
    public var logPosition: LogPosition
    public var stream: StreamKey
    public var version: Int64
    public var id: UUID
    public var type: String
    public var data: String
    public var occurredAt: Date
    public var recordedAt: Date
    public var outcome: String?
}

/// The events of one stream in a batch, as the projector sees them inside the append
/// transaction: the stream is locked and `previousVersion` is its version before the batch.
public struct StreamAppend: Sendable {
    public var stream: StreamKey
    public var previousVersion: Int64
    /// The new events, in order, with their batch index and assigned version.
    public var events: [(index: Int, version: Int64, event: NewEvent)]
}

/// Errors of the log, typed for the HTTP layer to map (409, 422, 503).
public enum EventLogError: Error, Sendable, CustomStringConvertible {
    /// `expectedVersion` did not match (409 `versionConflict`).
    case versionConflict(index: Int, stream: StreamKey, expected: Int64, actual: Int64)
    /// The event's id is stored already with other content (409 `idConflict`): `field` names
    /// the first that differs (`userId`, `deviceId`, `type`, `data`, `occurredAt`).
    case idConflict(index: Int, id: UUID, field: String)
    /// The projector refused an event; nothing of the batch was stored.
    case rejected(index: Int, reason: any Error & Sendable)
    /// The database failed (503 `databaseUnavailable` when unreachable).
    case database(any Error & Sendable)

    /// The same error with the event's index within a smaller batch.
    public func reindexed(_ index: Int) -> EventLogError {
        switch self {
        case .versionConflict(_, let stream, let expected, let actual):
            .versionConflict(index: index, stream: stream, expected: expected, actual: actual)
        case .idConflict(_, let id, let field):
            .idConflict(index: index, id: id, field: field)
        case .rejected(_, let reason):
            .rejected(index: index, reason: reason)
        case .database:
            self
        }
    }

    public var description: String {
        switch self {
        case .versionConflict(let index, let stream, let expected, let actual):
            "event \(index): stream \(stream) is at version \(actual), not the expected \(expected)"
        case .idConflict(let index, let id, let field):
            "event \(index): id \(id.lowercasedText) is stored already with other content (its \(field) differs)"
        case .rejected(let index, let reason):
            "event \(index): \(reason)"
        case .database(let error):
            "\(error)"
        }
    }
}
