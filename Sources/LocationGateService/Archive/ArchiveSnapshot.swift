import EventLog
import Foundation
import LocationAuthorization
import PostgresClient

/// What `locgate archive` keeps of the events it drops: each archived stream's device state at
/// the archive boundary (`stream_snapshots`, states named by their hash in
/// `device_state_kinds`) and the analytics counters of the archived events
/// (`archived_rollups`). A replay starts from them instead of from nothing. Rows count once
/// their archive is recorded in `event_archives` (written last, with the partitions' DROP).
enum ArchiveSnapshot {
    /// Serialises an archive's commit with a rebuild's reads (the rebuild reads the snapshot,
    /// then the log, in one transaction that must not see an archive commit in between).
    static let lockKey = Int64(0x6172_6368_6976_65)

    /// The projection at the boundary; empty when nothing was ever archived.
    static func load(appID: UUID?, rollups: Bool = true, on connection: PostgresConnection) throws -> Replay.Projection {
        var projection = Replay.Projection()
        let filter: PostgresQuery = appID.map { "AND s.app_id = \($0)" } ?? ""
        // States repeat (a few thousand kinds for millions of devices): each is decoded once.
        var kinds: [Int64: DeviceState] = [:]
        for row in try connection.query(
            """
            SELECT k.state_id, k.state::text FROM device_state_kinds k
            WHERE k.state_id IN (SELECT DISTINCT state_id FROM stream_snapshots)
            """) {
            kinds[try row.decode(0)] = try JSONText.state(try row.decode(1))
        }
        for row in try connection.query(PostgresQuery(
            unsafeSQL: """
                SELECT DISTINCT ON (s.app_id, s.user_id, s.device_id)
                       s.app_id, s.user_id, s.device_id, s.version, s.state_id, s.milestones
                FROM stream_snapshots s
                JOIN event_archives a ON a.id = s.archive_id
                WHERE true \(filter.sql)
                ORDER BY s.app_id, s.user_id, s.device_id, s.archive_id DESC
                """, binds: filter.binds)) {
            let key = StreamKey(appID: try row.decode(0), userID: try row.decode(1), deviceID: try row.decode(2))
            guard let state = kinds[try row.decode(4)] else { throw PostgresError(.decoding, message: "a snapshot's state is missing from device_state_kinds") }
            projection.devices[key] = DeviceStateStore.Row(
                key: key, version: try row.decode(3), state: state, milestones: DeviceMilestones(rawValue: try row.decode(5)))
        }
        guard rollups else { return projection }
        let rollupFilter: PostgresQuery = appID.map { "AND r.app_id = \($0)" } ?? ""
        for row in try connection.query(PostgresQuery(
            unsafeSQL: """
                SELECT r.app_id, r.day::text, r.platform, r.os_major, r.app_version, r.metric, r.key, sum(r.count)::bigint
                FROM (SELECT r.* FROM archived_rollups r JOIN event_archives a ON a.id = r.archive_id
                      UNION ALL
                      -- The counters of erased events, which no longer are in the log (SPEC §13).
                      SELECT NULL::bigint, e.app_id, e.day, e.platform, e.os_major, e.app_version, e.metric, e.key, e.count
                      FROM erasure_rollups e JOIN erasures x ON x.id = e.erasure_id AND x.erased_at IS NOT NULL) r
                WHERE true \(rollupFilter.sql)
                GROUP BY 1, 2, 3, 4, 5, 6, 7
                """, binds: rollupFilter.binds)) {
            projection.rollups.add(RollupKey(
                appID: try row.decode(0), day: try row.decode(1), platform: try row.decode(2), osMajor: try row.decode(3),
                appVersion: try row.decode(4), metric: try row.decode(5), key: try row.decode(6)), try row.decode(7))
        }
        return projection
    }

    /// Saves the states of `devices` at the new boundary under `archive` (their states' texts
    /// into the dictionary of states first), 2,000 a statement, each its own transaction: a
    /// long writing transaction would hold back the global order of every reader.
    /// `lastOccurred` is each device's latest occurredAt among this archive's events (an
    /// earlier archive's, when later, is kept).
    static func save(
        _ devices: [DeviceStateStore.Row], lastOccurred: [StreamKey: Date], archive: Int64, on connection: PostgresConnection
    ) throws {
        for chunk in devices.chunks(of: 2000) {
            try connection.query(
                """
                WITH n AS (
                    SELECT a, u, d, v, s, hashtextextended(s::text, 0) AS h, m,
                           greatest(o, (SELECT max(p.last_occurred_at) FROM stream_snapshots p JOIN event_archives e ON e.id = p.archive_id
                                        WHERE p.app_id = a AND p.user_id = u AND p.device_id = d)) AS o
                    FROM unnest(\(PostgresArray(chunk.map { $0.key.appID })), \(PostgresArray(chunk.map { $0.key.userID })),
                                \(PostgresArray(chunk.map { $0.key.deviceID })), \(PostgresArray(chunk.map { $0.version })),
                                \(PostgresArray(json: chunk.map { $0.state.storedJSON })),
                                \(PostgresArray(chunk.map { Int64($0.milestones.rawValue) })),
                                \(PostgresArray(chunk.map { lastOccurred[$0.key] ?? Date(timeIntervalSince1970: 0) })))
                        AS n(a, u, d, v, s, m, o)),
                kinds AS (
                    INSERT INTO device_state_kinds (state_id, state)
                    SELECT DISTINCT ON (h) h, s FROM n ORDER BY h
                    ON CONFLICT (state_id) DO NOTHING)
                INSERT INTO stream_snapshots (app_id, user_id, device_id, archive_id, version, state_id, milestones, last_occurred_at)
                SELECT a, u, d, \(archive), v, h, m, o FROM n
                """)
        }
    }

    /// One stream's state at the boundary: its version, state and the latest occurredAt of its
    /// archived events; nil when none of its events was archived.
    static func stream(_ key: StreamKey, on connection: PostgresConnection) throws -> (version: Int64, state: DeviceState, lastOccurredAt: Date)? {
        guard let row = try connection.query(
            """
            SELECT s.version, k.state::text, s.last_occurred_at
            FROM stream_snapshots s
            JOIN event_archives a ON a.id = s.archive_id
            JOIN device_state_kinds k USING (state_id)
            WHERE s.app_id = \(key.appID) AND s.user_id = \(key.userID) AND s.device_id = \(key.deviceID)
            ORDER BY s.archive_id DESC LIMIT 1
            """).first else { return nil }
        return (try row.decode(0), try JSONText.state(try row.decode(1)), try row.decode(2))
    }

    /// The snapshot rows of `keys` (those that have one), 2,000 streams a statement.
    static func streams(_ keys: [StreamKey], on connection: PostgresConnection) throws -> [StreamKey: DeviceStateStore.Row] {
        var rows: [StreamKey: DeviceStateStore.Row] = [:]
        var kinds: [Int64: DeviceState] = [:]
        for chunk in keys.chunks(of: 2000) {
            for row in try connection.query(
                """
                SELECT DISTINCT ON (s.app_id, s.user_id, s.device_id)
                       s.app_id, s.user_id, s.device_id, s.version, s.state_id, s.milestones, k.state::text
                FROM stream_snapshots s
                JOIN event_archives a ON a.id = s.archive_id
                JOIN device_state_kinds k USING (state_id)
                JOIN unnest(\(PostgresArray(chunk.map(\.appID))), \(PostgresArray(chunk.map(\.userID))),
                            \(PostgresArray(chunk.map(\.deviceID)))) AS n(a, u, d)
                  ON s.app_id = n.a AND s.user_id = n.u AND s.device_id = n.d
                ORDER BY s.app_id, s.user_id, s.device_id, s.archive_id DESC
                """) {
                let key = StreamKey(appID: try row.decode(0), userID: try row.decode(1), deviceID: try row.decode(2))
                let stateID: Int64 = try row.decode(4)
                let state = try kinds[stateID] ?? JSONText.state(try row.decode(6))
                kinds[stateID] = state
                rows[key] = DeviceStateStore.Row(
                    key: key, version: try row.decode(3), state: state, milestones: DeviceMilestones(rawValue: try row.decode(5)))
            }
        }
        return rows
    }

    /// Saves the counters of one archive's events.
    static func save(_ rollups: RollupCounts, archive: Int64, on connection: PostgresConnection) throws {
        for chunk in Array(rollups.counts).chunks(of: 5000) {
            try connection.query(
                """
                INSERT INTO archived_rollups (archive_id, app_id, day, platform, os_major, app_version, metric, key, count)
                SELECT \(archive), a, d::date, p, o, v, m, k, c
                FROM unnest(\(PostgresArray(chunk.map { $0.key.appID })), \(PostgresArray(chunk.map { $0.key.day })),
                            \(PostgresArray(chunk.map { $0.key.platform })), \(PostgresArray(chunk.map { Int64($0.key.osMajor) })),
                            \(PostgresArray(chunk.map { $0.key.appVersion })), \(PostgresArray(chunk.map { $0.key.metric })),
                            \(PostgresArray(chunk.map { $0.key.key })), \(PostgresArray(chunk.map { $0.value })))
                    AS r(a, d, p, o, v, m, k, c)
                """)
        }
    }

    /// Rows of archives that never committed (an archive that failed after writing some).
    static func removeUnrecorded(on connection: PostgresConnection) throws {
        try connection.query("DELETE FROM stream_snapshots WHERE archive_id NOT IN (SELECT id FROM event_archives)")
        try connection.query("DELETE FROM archived_rollups WHERE archive_id NOT IN (SELECT id FROM event_archives)")
    }

    /// The rows of `keys` that a newer recorded archive replaced, 2,000 streams a statement.
    static func removeSuperseded(_ keys: [StreamKey], by archive: Int64, on connection: PostgresConnection) throws {
        for chunk in keys.chunks(of: 2000) {
            try connection.query(
                """
                DELETE FROM stream_snapshots s
                USING unnest(\(PostgresArray(chunk.map(\.appID))), \(PostgresArray(chunk.map(\.userID))),
                             \(PostgresArray(chunk.map(\.deviceID)))) AS k(a, u, d)
                WHERE s.app_id = k.a AND s.user_id = k.u AND s.device_id = k.d AND s.archive_id < \(archive)
                """)
        }
    }
}
