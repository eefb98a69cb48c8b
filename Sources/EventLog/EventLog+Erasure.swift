import Foundation
import PostgresClient

extension EventLog {
    /// Every event of one person of one app (erasure folds their analytics counters first).
    public static func events(ofUser userID: String, appID: UUID, on connection: PostgresConnection) throws -> [RecordedEvent] {
        try decode(connection.query("SELECT \(unescaped: columns) FROM events WHERE app_id = \(appID) AND user_id = \(userID)"))
    }

    /// Takes a person's lock exclusively for the transaction: appends of that person already
    /// holding it (shared, `lock(_:on:)`) finish first, and new ones wait until it ends.
    public static func lockPerson(appID: UUID, userID: String, on connection: PostgresConnection) throws {
        try connection.query("SELECT pg_advisory_xact_lock(\(userLockKey(appID: appID, userID: userID)))")
    }
}
