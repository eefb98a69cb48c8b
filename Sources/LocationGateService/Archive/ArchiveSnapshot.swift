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
                       s.app_id, s.user_id, s.device_id, s.version, s.state_id, s.milestones, s.install_id
                FROM stream_snapshots s
                JOIN event_archives a ON a.id = s.archive_id
                WHERE true \(filter.sql)
                ORDER BY s.app_id, s.user_id, s.device_id, s.archive_id DESC
                """, binds: filter.binds)) {
            let key = StreamKey(appID: try row.decode(0), userID: try row.decode(1), deviceID: try row.decode(2))
            guard var state = kinds[try row.decode(4)] else { throw PostgresError(.decoding, message: "a snapshot's state is missing from device_state_kinds") }
            state.installID = try row.decodeIfPresent(6, as: String.self)
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
                    SELECT a, u, d, v, s, hashtextextended(s::text, 0) AS h, m, ii,
                           greatest(o, (SELECT max(p.last_occurred_at) FROM stream_snapshots p JOIN event_archives e ON e.id = p.archive_id
                                        WHERE p.app_id = a AND p.user_id = u AND p.device_id = d)) AS o
                    FROM unnest(\(PostgresArray(chunk.map { $0.key.appID })), \(PostgresArray(chunk.map { $0.key.userID })),
                                \(PostgresArray(chunk.map { $0.key.deviceID })), \(PostgresArray(chunk.map { $0.version })),
                                \(PostgresArray(json: chunk.map { $0.state.storedJSON })),
                                \(PostgresArray(chunk.map { Int64($0.milestones.rawValue) })),
                                \(PostgresArray(chunk.map { lastOccurred[$0.key] ?? Date(timeIntervalSince1970: 0) })),
                                \(PostgresArray(chunk.map { $0.state.installID }, typeOID: PostgresType.textArray)))
                        AS n(a, u, d, v, s, m, o, ii)),
                kinds AS (
                    INSERT INTO device_state_kinds (state_id, state)
                    SELECT DISTINCT ON (h) h, s FROM n ORDER BY h
                    ON CONFLICT (state_id) DO NOTHING)
                INSERT INTO stream_snapshots (app_id, user_id, device_id, archive_id, version, state_id, milestones, last_occurred_at, install_id)
                SELECT a, u, d, \(archive), v, h, m, o, ii FROM n
                """)
        }
    }

    /// One stream's state at the boundary: its version, state and the latest occurredAt of its
    /// archived events; nil when none of its events was archived.
    static func stream(_ key: StreamKey, on connection: PostgresConnection) throws -> (version: Int64, state: DeviceState, lastOccurredAt: Date)? {
        guard let row = try connection.query(
            """
            SELECT s.version, k.state::text, s.last_occurred_at, s.install_id
            FROM stream_snapshots s
            JOIN event_archives a ON a.id = s.archive_id
            JOIN device_state_kinds k USING (state_id)
            WHERE s.app_id = \(key.appID) AND s.user_id = \(key.userID) AND s.device_id = \(key.deviceID)
            ORDER BY s.archive_id DESC LIMIT 1
            """).first else { return nil }
        var state = try JSONText.state(try row.decode(1))
        state.installID = try row.decodeIfPresent(3, as: String.self)
        return (try row.decode(0), state, try row.decode(2))
    }

    /// The snapshot rows of `keys` (those that have one), 2,000 streams a statement.
    static func streams(_ keys: [StreamKey], on connection: PostgresConnection) throws -> [StreamKey: DeviceStateStore.Row] {
        var rows: [StreamKey: DeviceStateStore.Row] = [:]
        var kinds: [Int64: DeviceState] = [:]
        for chunk in keys.chunks(of: 2000) {
            for row in try connection.query(
                """
                SELECT DISTINCT ON (s.app_id, s.user_id, s.device_id)
                       s.app_id, s.user_id, s.device_id, s.version, s.state_id, s.milestones, k.state::text, s.install_id
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
                var state = try kinds[stateID] ?? JSONText.state(try row.decode(6))
                kinds[stateID] = state
                state.installID = try row.decodeIfPresent(7, as: String.self)
                rows[key] = DeviceStateStore.Row(
                    key: key, version: try row.decode(3), state: state, milestones: DeviceMilestones(rawValue: try row.decode(5)))
            }
        }
        return rows
    }

    /// What `fold` did: the streams whose snapshot it saved, the events the current rules
    /// refuse, and the analytics counters of the events.
    struct Folded {
        var devices = 0
        var rejected = 0
        var rollups = RollupCounts()
    }

    /// Saves under `archive` the snapshot of every stream with events below `boundary`, at the
    /// boundary: its previous snapshot (an earlier archive's, if any) folded with those events
    /// by the append path's own function (`Replay.Projection.fold`).
    ///
    /// Memory stays bounded whatever the number of events and streams: the events are read
    /// `pageSize` at a time in stream order (`EventLog.exportStreamPage`), so a stream is
    /// complete, and saved and forgotten, once the page moves past it; only the page's streams
    /// are held, with their previous snapshots read for them alone. A stream's fold needs its
    /// own events in version order and nothing of other streams, so stream order gives the
    /// states and counters that the log's global order gives. The counters are kept to the end:
    /// one per app, day, platform, version and measure, not per event.
    static func fold(below boundary: Int64, archive: Int64, pageSize: Int, on connection: PostgresConnection) throws -> Folded {
        let limit = max(1, pageSize)
        var folded = Folded()
        var projection = Replay.Projection()
        var lastOccurred: [StreamKey: Date] = [:]
        var cursor: (stream: StreamKey, version: Int64)?
        while true {
            let page = try EventLog.exportStreamPage(below: boundary, after: cursor, limit: limit, on: connection)
            // The streams this page starts: their previous snapshots.
            var starting: Set<StreamKey> = []
            for event in page where projection.devices[event.stream] == nil && lastOccurred[event.stream] == nil {
                starting.insert(event.stream)
            }
            for (key, row) in try streams(Array(starting), on: connection) { projection.devices[key] = row }
            for event in page {
                projection.fold(event)
                lastOccurred[event.stream] = max(lastOccurred[event.stream] ?? event.occurredAt, event.occurredAt)
            }
            folded.rejected += projection.rejected.count
            projection.rejected.removeAll()
            let full = page.count == limit
            // Every stream of the page but its last is complete; after the last page, that one too.
            let open = full ? page.last?.stream : nil
            let complete = projection.devices.values.filter { $0.key != open }
            try save(complete, lastOccurred: lastOccurred, archive: archive, on: connection)
            folded.devices += lastOccurred.keys.filter { $0 != open }.count
            projection.devices = projection.devices.filter { $0.key == open }
            lastOccurred = lastOccurred.filter { $0.key == open }
            guard full, let last = page.last else { break }
            cursor = (last.stream, last.version)
        }
        folded.rollups = projection.rollups
        return folded
    }

    /// Saves the counters of one archive's events.
    static func save(_ rollups: RollupCounts, archive: Int64, on connection: PostgresConnection) throws {
        try rollups.add(to: .archive(archive), on: connection)
    }

    /// Rows of archives that never committed (an archive that failed after writing some).
    static func removeUnrecorded(on connection: PostgresConnection) throws {
        try connection.query("DELETE FROM stream_snapshots WHERE archive_id NOT IN (SELECT id FROM event_archives)")
        try connection.query("DELETE FROM archived_rollups WHERE archive_id NOT IN (SELECT id FROM event_archives)")
    }

    /// The rows that `archive` replaced: every earlier row of its streams, which are read back
    /// from its own rows in key order, 2,000 a statement (an archive's streams are never all
    /// held in memory).
    static func removeSuperseded(by archive: Int64, on connection: PostgresConnection) throws {
        var after: StreamKey?
        while true {
            let rows: PostgresRows
            if let after {
                rows = try connection.query(
                    """
                    SELECT app_id, user_id, device_id FROM stream_snapshots
                    WHERE archive_id = \(archive)
                      AND (app_id, user_id, device_id) > (\(after.appID), \(after.userID), \(after.deviceID))
                    ORDER BY app_id, user_id, device_id
                    LIMIT 2000
                    """)
            } else {
                rows = try connection.query(
                    """
                    SELECT app_id, user_id, device_id FROM stream_snapshots
                    WHERE archive_id = \(archive)
                    ORDER BY app_id, user_id, device_id
                    LIMIT 2000
                    """)
            }
            let keys = try rows.map { StreamKey(appID: try $0.decode(0), userID: try $0.decode(1), deviceID: try $0.decode(2)) }
            try removeSuperseded(keys, by: archive, on: connection)
            guard keys.count == 2000, let last = keys.last else { return }
            after = last
        }
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
