import EventLog
import Foundation
import LocationAuthorization
import PostgresClient
import Synchronization

/// Reads and writes the `device_states` projection.
public enum DeviceStateStore {
    /// Devices of one user that user-level gates and OFREP without `deviceId` evaluate.
    public static let maxUserDevices = 100

    /// One device as the projection holds it.
    public struct Row: Sendable, Hashable {
        public var key: StreamKey
        public var version: Int64
        public var state: DeviceState
        public var milestones: DeviceMilestones
    }

    static func load(appID: UUID, keys: [StreamKey], on connection: PostgresConnection) throws -> [StreamKey: Row] {
        try rows(appID: appID, try connection.query(loadQuery(appID: appID, keys: keys)))
    }

    /// The statement reading these devices' rows (those the projection holds), for `rows`.
    static func loadQuery(appID: UUID, keys: [StreamKey]) -> PostgresQuery {
        """
        SELECT s.user_id, s.device_id, s.version, s.state::text, s.milestones, s.install_id
        FROM unnest(\(PostgresArray(keys.map(\.userID))), \(PostgresArray(keys.map(\.deviceID)))) AS k(u, d)
        CROSS JOIN LATERAL (
            SELECT user_id, device_id, version, state, milestones, install_id FROM device_states
            WHERE app_id = \(appID) AND user_id = k.u AND device_id = k.d OFFSET 0) AS s
        """
    }

    /// The devices `loadQuery`'s statement read, by stream.
    static func rows(appID: UUID, _ rows: PostgresRows) throws -> [StreamKey: Row] {
        var states: [StreamKey: Row] = [:]
        // Sized once: grown from empty, it rehashed every stream at each doubling.
        states.reserveCapacity(rows.count)
        for row in rows {
            let key = StreamKey(appID: appID, userID: try row.decode(0), deviceID: try row.decode(1))
            var state = try JSONText.state(try row.decode(3))
            // I1's memory of the installation, kept beside the state (it is no part of a kind).
            state.installID = try row.decodeIfPresent(5, as: String.self)
            states[key] = Row(key: key, version: try row.decode(2), state: state, milestones: DeviceMilestones(rawValue: try row.decode(4)))
        }
        return states
    }

    /// The devices a user-level gate considers: the first `maxUserDevices` of the user by
    /// device id (the primary key's order, so the read is bounded however many devices a
    /// user reports).
    static func loadUser(appID: UUID, userID: String, on connection: PostgresConnection) throws -> [(String, DeviceStateCache.Entry)] {
        let rows = try connection.query(
            """
            SELECT device_id, version, state::text FROM device_states
            WHERE app_id = \(appID) AND user_id = \(userID) ORDER BY device_id LIMIT \(Int64(Self.maxUserDevices))
            """)
        return try rows.map { row in
            (try row.decode(0), DeviceStateCache.Entry(version: try row.decode(1), state: try JSONText.state(try row.decode(2))))
        }
    }

    /// Writes devices of one app. `texts` are their states' stored forms when the caller has
    /// made them already (the append, which counts them too).
    ///
    /// `absent` (in `devices`' order) marks the devices the caller read as having no row, under
    /// their streams' locks: they are inserted with a plain `INSERT`, which costs PostgreSQL
    /// about half of an `ON CONFLICT` upsert's speculative insertion; the others, and all of them
    /// when `absent` is nil, are upserted. A row that appeared since the read (a replay's rebuild
    /// writes states without the streams' locks) fails the plain insert with a unique
    /// violation, and the append runs again and reads it.
    public static func save(
        appID: UUID, _ devices: [Row], texts: [String]? = nil, absent: [Bool]? = nil, on connection: PostgresConnection
    ) throws {
        guard !devices.isEmpty else { return }
        let texts = texts ?? devices.map(\.state.storedJSON)
        guard let absent, absent.contains(true) else {
            return try write(appID: appID, devices, texts: texts, upsert: true, on: connection)
        }
        guard absent.contains(false) else {
            return try write(appID: appID, devices, texts: texts, upsert: false, on: connection)
        }
        for upsert in [false, true] {
            let indices = devices.indices.filter { absent[$0] != upsert }
            try write(appID: appID, indices.map { devices[$0] }, texts: indices.map { texts[$0] }, upsert: upsert, on: connection)
        }
    }

    /// One statement writing `devices` (inserted, or upserted keeping the newer version).
    private static func write(appID: UUID, _ devices: [Row], texts: [String], upsert: Bool, on connection: PostgresConnection) throws {
        let conflict = upsert ? """
            ON CONFLICT (app_id, user_id, device_id) DO UPDATE SET
                version = excluded.version, state = excluded.state, status = excluded.status,
                provisional = excluded.provisional, platform = excluded.platform, os_major = excluded.os_major,
                app_version = excluded.app_version, milestones = excluded.milestones, install_id = excluded.install_id,
                updated_at = now()
            WHERE device_states.version <= excluded.version
            """ : ""
        // Queued with the append's other writes (`send`): one round trip at COMMIT.
        try connection.send(
            """
            INSERT INTO device_states (app_id, user_id, device_id, version, state, status, provisional, platform, os_major, app_version, milestones, install_id)
            SELECT \(appID), u, d, v, s, st, p, pl, om, av, m, ii
            FROM unnest(\(PostgresArray(devices.map { $0.key.userID })), \(PostgresArray(devices.map { $0.key.deviceID })),
                        \(PostgresArray(devices.map { $0.version })), \(PostgresArray(json: texts)),
                        \(PostgresArray(devices.map { $0.state.status.rawValue })),
                        \(PostgresArray(devices.map { $0.state.provisional ? "t" : "f" }, typeOID: PostgresType.boolArray)),
                        \(PostgresArray(devices.map { $0.state.context.platform?.rawValue }, typeOID: PostgresType.textArray)),
                        \(PostgresArray(devices.map { $0.state.context.osMajor.map(String.init) }, typeOID: PostgresType.int8Array)),
                        \(PostgresArray(devices.map { $0.state.context.appVersion }, typeOID: PostgresType.textArray)),
                        \(PostgresArray(devices.map { Int64($0.milestones.rawValue) })),
                        \(PostgresArray(devices.map { $0.state.installID }, typeOID: PostgresType.textArray)))
                AS n(u, d, v, s, st, p, pl, om, av, m, ii)
            \(unescaped: conflict)
            """)
    }

    /// Moves the devices of `devices` from their old states' counts to their new ones in
    /// `device_counts` (adding a state never seen before to `device_state_kinds`), in the
    /// append transaction. Rows go in the state's text order and in this backend's lane, so
    /// concurrent appends neither wait on each other's counters nor deadlock.
    /// `texts` are the new states' stored forms, in `devices`' order (as `save` takes them).
    static func count(
        appID: UUID, _ devices: [Row], texts: [String], replacing previous: [StreamKey: Row], on connection: PostgresConnection
    ) throws {
        var deltas: [String: (count: Int64, state: DeviceState)] = [:]
        for (index, device) in devices.enumerated() {
            let old = previous[device.key]?.state
            guard old != device.state else { continue }
            if let old { deltas[old.storedJSON, default: (0, old)].count -= 1 }
            deltas[texts[index], default: (0, device.state)].count += 1
        }
        let rows = deltas.filter { $0.value.count != 0 }.sorted { $0.key < $1.key }
        guard !rows.isEmpty else { return }
        let states = rows.map(\.value.state)
        try connection.send(
            """
            WITH n AS (
                SELECT s, hashtextextended(s::text, 0) AS id, st, pl, om, av, c, i
                FROM unnest(\(PostgresArray(json: rows.map(\.key))), \(PostgresArray(states.map { $0.status.rawValue })),
                            \(PostgresArray(states.map { $0.context.platform?.rawValue }, typeOID: PostgresType.textArray)),
                            \(PostgresArray(states.map { $0.context.osMajor.map(String.init) }, typeOID: PostgresType.int8Array)),
                            \(PostgresArray(states.map { $0.context.appVersion }, typeOID: PostgresType.textArray)),
                            \(PostgresArray(rows.map(\.value.count))))
                    WITH ORDINALITY AS n(s, st, pl, om, av, c, i)),
            kinds AS (
                INSERT INTO device_state_kinds (state_id, state)
                SELECT id, s FROM n WHERE c > 0 ORDER BY i ON CONFLICT (state_id) DO NOTHING)
            INSERT INTO device_counts (app_id, lane, state_id, status, platform, os_major, app_version, devices)
            SELECT \(appID), (pg_backend_pid() % 16)::smallint, id, st, pl, om, av, c FROM n ORDER BY i
            ON CONFLICT (app_id, lane, state_id) DO UPDATE SET devices = device_counts.devices + excluded.devices
            """)
    }

    /// Counts the app's devices again from `device_states` (after a rebuild has rewritten them).
    static func recount(appID: UUID?, on connection: PostgresConnection) throws {
        try connection.query("DELETE FROM device_counts WHERE \(appID?.uuidString)::uuid IS NULL OR app_id = \(appID?.uuidString)::uuid")
        try connection.query(
            """
            INSERT INTO device_state_kinds (state_id, state)
            SELECT DISTINCT ON (hashtextextended(state::text, 0)) hashtextextended(state::text, 0), state FROM device_states
            WHERE \(appID?.uuidString)::uuid IS NULL OR app_id = \(appID?.uuidString)::uuid
            ON CONFLICT (state_id) DO NOTHING
            """)
        try connection.query(
            """
            INSERT INTO device_counts (app_id, lane, state_id, status, platform, os_major, app_version, devices)
            SELECT app_id, 0, hashtextextended(state::text, 0), min(status), min(platform), min(os_major), min(app_version), count(*)
            FROM device_states WHERE \(appID?.uuidString)::uuid IS NULL OR app_id = \(appID?.uuidString)::uuid
            GROUP BY app_id, hashtextextended(state::text, 0)
            """)
    }
}
