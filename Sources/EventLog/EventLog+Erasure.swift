import Foundation
import PostgresClient

/// What erasure and export read of the log: one person (or one device of theirs) a page at a
/// time, and the person's lock.
extension EventLog {
    /// The first `limit` of one person's events still in the log, by device and version: an
    /// erasure reads a person a page per transaction, so that neither its memory nor any of its
    /// statements grows with the person. Reads the per-partition unique index that starts with
    /// (app, user, device, version), so the page costs the same at any depth of a large person.
    ///
    /// With `device`, that device's events only (an erasure of one device): the same index, one
    /// device's range of it.
    public static func eventsPage(
        ofUser userID: String, device deviceID: String? = nil, appID: UUID, limit: Int, on connection: PostgresConnection
    ) throws -> [RecordedEvent] {
        guard let deviceID else {
            return try decode(connection.query(
                """
                SELECT \(unescaped: columns) FROM events
                WHERE app_id = (SELECT \(appID)) AND user_id = \(userID)
                ORDER BY device_id, version
                LIMIT \(limit)
                """))
        }
        return try decode(connection.query(
            """
            SELECT \(unescaped: columns) FROM events
            WHERE app_id = (SELECT \(appID)) AND user_id = \(userID) AND device_id = \(deviceID)
            ORDER BY version
            LIMIT \(limit)
            """))
    }

    /// The first `limit` devices of one person, by device id (their streams: a device whose
    /// every event was archived or forgotten by retention has one and no event in the log).
    ///
    /// `after` pages on (the devices after that id; an export reads a person a page of devices
    /// at a time); with `device`, that one device when it has a stream.
    public static func devices(
        ofUser userID: String, device deviceID: String? = nil, appID: UUID, after: String = "", limit: Int,
        on connection: PostgresConnection
    ) throws -> [String] {
        guard let deviceID else {
            return try connection.query(
                """
                SELECT device_id FROM streams WHERE app_id = \(appID) AND user_id = \(userID) AND device_id > \(after)
                ORDER BY device_id LIMIT \(limit)
                """
            ).map { try $0.decode(0) }
        }
        return try connection.query(
            """
            SELECT device_id FROM streams WHERE app_id = \(appID) AND user_id = \(userID) AND device_id = \(deviceID)
              AND device_id > \(after)
            LIMIT \(limit)
            """
        ).map { try $0.decode(0) }
    }

    /// Whether the log still holds anything of the person: a stream or an event.
    ///
    /// The events statements here name the app by a sub-select, as the append's idempotency
    /// probe does (`append`): for a new app that the statistics have not sampled, the literal
    /// made every index that starts with `app_id` look equally cheap, and one that does not
    /// lead on to the user filters every event of the app.
    public static func holdsPerson(appID: UUID, userID: String, on connection: PostgresConnection) throws -> Bool {
        try connection.query(
            """
            SELECT EXISTS (SELECT 1 FROM streams WHERE app_id = \(appID) AND user_id = \(userID))
                OR EXISTS (SELECT 1 FROM events WHERE app_id = (SELECT \(appID)) AND user_id = \(userID))
            """
        ).first?.decode(0, as: Bool.self) ?? true
    }

    /// Whether the log still holds anything of one device of a person: its stream or an event.
    public static func holdsDevice(appID: UUID, userID: String, deviceID: String, on connection: PostgresConnection) throws -> Bool {
        try connection.query(
            """
            SELECT EXISTS (SELECT 1 FROM streams WHERE app_id = \(appID) AND user_id = \(userID) AND device_id = \(deviceID))
                OR EXISTS (SELECT 1 FROM events WHERE app_id = (SELECT \(appID)) AND user_id = \(userID) AND device_id = \(deviceID))
            """
        ).first?.decode(0, as: Bool.self) ?? true
    }

    /// Takes a person's lock exclusively for the transaction: appends of that person already
    /// holding it (shared, `lock(_:on:)`) finish first, and new ones wait until it ends. An
    /// erasure takes it for each of its pages, one transaction at a time, never across them
    /// (docs/privacy.md, "Racing appends").
    public static func lockPerson(appID: UUID, userID: String, on connection: PostgresConnection) throws {
        try connection.query("SELECT pg_advisory_xact_lock(\(userLockKey(appID: appID, userID: userID)))")
    }
}
