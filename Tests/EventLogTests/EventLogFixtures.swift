import EventLog
import Foundation
import LocationGateTestSupport
import PostgresClient

/// A log on the shared test database with an app of its own.
struct LogFixture {
    let pool: PostgresConnectionPool
    let log: EventLog
    let appID: UUID

    static func make(poolSize: Int = 4) async throws -> LogFixture {
        let pool = try await TestDatabase.pool(size: poolSize)
        let appID = try await TestDatabase.makeApp(pool)
        return LogFixture(pool: pool, log: EventLog(pool: pool, logger: TestDatabase.logger), appID: appID)
    }

    func stream(_ user: String, _ device: String) -> StreamKey {
        StreamKey(appID: appID, userID: user, deviceID: device)
    }

    /// Counts this app's stored events.
    func count() async throws -> Int {
        try await pool.query("SELECT count(*) FROM events WHERE app_id = \(appID)").first?.decode(0) ?? -1
    }
}

func event(
    _ user: String = "u1", _ device: String = "d1", id: UUID = UUID(), type: String = "locationServicesChanged",
    expectedVersion: Int64? = nil
) -> NewEvent {
    NewEvent(
        id: id, userID: user, deviceID: device, type: type, data: #"{"enabled": true}"#,
        occurredAt: Date(timeIntervalSince1970: 1_795_341_600), expectedVersion: expectedVersion)
}
