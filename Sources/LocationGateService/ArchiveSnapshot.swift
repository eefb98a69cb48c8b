import EventLog
import Foundation
import LocationAuthorization
import PostgresClient

/// What `locgate archive` keeps of the events it drops: each archived stream's device state at
/// the archive boundary (`stream_snapshots`, states named by their hash in
/// `device_state_kinds`) and the analytics counters of the archived events
/// (`archived_rollups`). A replay starts from them instead of from nothing.
enum ArchiveSnapshot {
    /// The projection at the boundary; empty when nothing was ever archived.
    static func load(appID: UUID?, on connection: PostgresConnection) throws -> Replay.Projection {
        var projection = Replay.Projection()
        let filter = appID.map { "WHERE s.app_id = '\($0.uuidString.lowercased())'::uuid" } ?? ""
        for row in try connection.query(PostgresQuery(
            unsafeSQL: """
                SELECT s.app_id, s.user_id, s.device_id, s.version, k.state::text, s.milestones
                FROM stream_snapshots s JOIN device_state_kinds k USING (state_id)
                """ + " " + filter)) {
            let key = StreamKey(appID: try row.decode(0), userID: try row.decode(1), deviceID: try row.decode(2))
            projection.devices[key] = DeviceStateStore.Row(
                key: key, version: try row.decode(3), state: try JSONText.state(try row.decode(4)),
                milestones: DeviceMilestones(rawValue: try row.decode(5)))
        }
        let rollupFilter = appID.map { "WHERE app_id = '\($0.uuidString.lowercased())'::uuid" } ?? ""
        for row in try connection.query(PostgresQuery(
            unsafeSQL: "SELECT app_id, day::text, platform, os_major, app_version, metric, key, count FROM archived_rollups " + rollupFilter)) {
            projection.rollups.add(RollupKey(
                appID: try row.decode(0), day: try row.decode(1), platform: try row.decode(2), osMajor: try row.decode(3),
                appVersion: try row.decode(4), metric: try row.decode(5), key: try row.decode(6)), try row.decode(7))
        }
        return projection
    }

    /// Saves the states of `devices` at the new boundary (their states' texts into the
    /// dictionary of states first).
    static func save(_ devices: [DeviceStateStore.Row], on connection: PostgresConnection) throws {
        for start in stride(from: 0, to: devices.count, by: 2000) {
            let chunk = devices[start..<min(start + 2000, devices.count)]
            try connection.query(
                """
                WITH n AS (
                    SELECT a, u, d, v, s, hashtextextended(s::text, 0) AS h, m
                    FROM unnest(\(PostgresArray(chunk.map { $0.key.appID })), \(PostgresArray(chunk.map { $0.key.userID })),
                                \(PostgresArray(chunk.map { $0.key.deviceID })), \(PostgresArray(chunk.map { $0.version })),
                                \(PostgresArray(json: chunk.map { $0.state.storedJSON })),
                                \(PostgresArray(chunk.map { Int64($0.milestones.rawValue) }))) AS n(a, u, d, v, s, m)),
                kinds AS (
                    INSERT INTO device_state_kinds (state_id, state)
                    SELECT DISTINCT ON (h) h, s FROM n ORDER BY h
                    ON CONFLICT (state_id) DO NOTHING)
                INSERT INTO stream_snapshots (app_id, user_id, device_id, version, state_id, milestones)
                SELECT a, u, d, v, h, m FROM n
                ON CONFLICT (app_id, user_id, device_id) DO UPDATE SET
                    version = excluded.version, state_id = excluded.state_id, milestones = excluded.milestones
                """)
        }
    }

    /// Replaces the archived counters with `rollups` (those of every archive so far).
    static func save(_ rollups: RollupCounts, on connection: PostgresConnection) throws {
        try connection.query("DELETE FROM archived_rollups")
        let rows = Array(rollups.counts)
        for start in stride(from: 0, to: rows.count, by: 5000) {
            let chunk = rows[start..<min(start + 5000, rows.count)]
            try connection.query(
                """
                INSERT INTO archived_rollups (app_id, day, platform, os_major, app_version, metric, key, count)
                SELECT a, d::date, p, o, v, m, k, c
                FROM unnest(\(PostgresArray(chunk.map { $0.key.appID })), \(PostgresArray(chunk.map { $0.key.day })),
                            \(PostgresArray(chunk.map { $0.key.platform })), \(PostgresArray(chunk.map { Int64($0.key.osMajor) })),
                            \(PostgresArray(chunk.map { $0.key.appVersion })), \(PostgresArray(chunk.map { $0.key.metric })),
                            \(PostgresArray(chunk.map { $0.key.key })), \(PostgresArray(chunk.map { $0.value })))
                    AS r(a, d, p, o, v, m, k, c)
                """)
        }
    }
}
