import EventLog
import Foundation
import LocationAuthorization
import PostgresClient

/// What the gates read from the database: device states from the `device_states` projection,
/// on the primary (a gate must reflect every acknowledged append). Its SQL is
/// `DeviceStateStore`'s, which the append transaction writes with.
struct GateStore: Sendable {
    let pool: PostgresConnectionPool

    /// The stored rows of these devices; devices with no events are absent.
    func devices(appID: UUID, keys: [StreamKey]) async throws -> [StreamKey: DeviceStateStore.Row] {
        try await pool.withConnection { connection in
            try DeviceStateStore.load(appID: appID, keys: keys, on: connection)
        }
    }

    /// Every stored device of a user, by device id.
    func devices(appID: UUID, userID: String) async throws -> [(String, DeviceStateCache.Entry)] {
        try await pool.withConnection { connection in
            try DeviceStateStore.loadUser(appID: appID, userID: userID, on: connection)
        }
    }
}
