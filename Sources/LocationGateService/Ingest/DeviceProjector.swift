import EventLog
import Foundation
import LocationAuthorization
import PostgresClient
import Synchronization

/// The device projection, run inside the append transaction (SPEC §2, §3): loads each stream's
/// state from `device_states`, applies the batch's events with the reducer, writes the new
/// states back, and returns each event's outcome to be stored with it. A rule rejection throws
/// and rolls the whole batch back.
final class DeviceProjector: AppendProjector {
    /// The decoded events by batch index; the log only carries their JSON.
    private let events: [Int: LocationEvent]
    private let projected = Mutex<(states: [(StreamKey, Int64, DeviceState)], outcomes: [Int: EventOutcome])>(([], [:]))

    init(events: [Int: LocationEvent]) {
        self.events = events
    }

    /// The states the append wrote, for the cache once it has committed.
    var states: [(StreamKey, Int64, DeviceState)] { projected.withLock { $0.states } }

    /// The outcome of each appended event by batch index, so that the answer to the request
    /// need not read back the JSON it stored.
    var outcomes: [Int: EventOutcome] { projected.withLock { $0.outcomes } }

    func project(_ appends: [StreamAppend], on connection: PostgresConnection) throws -> [[String?]] {
        guard let appID = appends.first?.stream.appID else { return [] }
        let current = try DeviceStateStore.load(appID: appID, keys: appends.map(\.stream), on: connection)
        var outcomes: [[String?]] = []
        var written: [DeviceStateStore.Row] = []
        var outcomesByIndex: [Int: EventOutcome] = [:]
        for append in appends {
            var device = current[append.stream] ?? DeviceStateStore.Row(key: append.stream, version: 0, state: DeviceState(), milestones: [])
            var streamOutcomes: [String?] = []
            for planned in append.events {
                guard let event = events[planned.index] else {
                    throw ServiceError(.invalidRequest, "event \(planned.index) was not decoded", index: planned.index)
                }
                let outcome: EventOutcome
                do {
                    outcome = try Self.apply(event, to: &device)
                } catch {
                    throw EventLogError.rejected(index: planned.index, reason: error)
                }
                streamOutcomes.append(outcome.storedJSON)
                outcomesByIndex[planned.index] = outcome
            }
            device.version = append.events.last?.version ?? append.previousVersion
            written.append(device)
            outcomes.append(streamOutcomes)
        }
        try DeviceStateStore.save(appID: appID, written, on: connection)
        try DeviceStateStore.count(appID: appID, written, replacing: current, on: connection)
        projected.withLock { $0 = (written.map { ($0.key, $0.version, $0.state) }, outcomesByIndex) }
        return outcomes
    }
}

extension DeviceProjector {
    /// Applies one event to a device: the reducer, then the analytics of the transition. The
    /// replay uses the same function, so a rebuild computes exactly what appends computed.
    static func apply(_ event: LocationEvent, to device: inout DeviceStateStore.Row) throws(AuthorizationRejection) -> EventOutcome {
        let before = device.state
        let effects = try device.state.apply(event)
        let reached = DeviceMilestones.reached(before: before, after: device.state, effects: effects)
        let new = reached.subtracting(device.milestones)
        device.milestones.formUnion(reached)
        let analytics = EventAnalytics.make(event: event, before: before, after: device.state, effects: effects, newMilestones: new)
        return EventOutcome(effects: effects, before: before.summary, after: device.state.summary, analytics: analytics)
    }
}

/// Reads and writes the `device_states` projection.
public enum DeviceStateStore {
    /// One device as the projection holds it.
    public struct Row: Sendable, Hashable {
        public var key: StreamKey
        public var version: Int64
        public var state: DeviceState
        public var milestones: DeviceMilestones
    }

    static func load(appID: UUID, keys: [StreamKey], on connection: PostgresConnection) throws -> [StreamKey: Row] {
        let rows = try connection.query(
            """
            SELECT s.user_id, s.device_id, s.version, s.state::text, s.milestones
            FROM unnest(\(PostgresArray(keys.map(\.userID))), \(PostgresArray(keys.map(\.deviceID)))) AS k(u, d)
            CROSS JOIN LATERAL (
                SELECT user_id, device_id, version, state, milestones FROM device_states
                WHERE app_id = \(appID) AND user_id = k.u AND device_id = k.d LIMIT 1) AS s
            """)
        var states: [StreamKey: Row] = [:]
        for row in rows {
            let key = StreamKey(appID: appID, userID: try row.decode(0), deviceID: try row.decode(1))
            states[key] = Row(
                key: key, version: try row.decode(2), state: try JSONText.state(try row.decode(3)),
                milestones: DeviceMilestones(rawValue: try row.decode(4)))
        }
        return states
    }

    /// Every device of a user, for user-level gates.
    static func loadUser(appID: UUID, userID: String, on connection: PostgresConnection) throws -> [(String, DeviceStateCache.Entry)] {
        let rows = try connection.query(
            """
            SELECT device_id, version, state::text FROM device_states
            WHERE app_id = \(appID) AND user_id = \(userID) ORDER BY device_id
            """)
        return try rows.map { row in
            (try row.decode(0), DeviceStateCache.Entry(version: try row.decode(1), state: try JSONText.state(try row.decode(2))))
        }
    }

    /// Upserts devices of one app.
    public static func save(appID: UUID, _ devices: [Row], on connection: PostgresConnection) throws {
        guard !devices.isEmpty else { return }
        let texts = devices.map(\.state.storedJSON)
        // Queued with the append's other writes (`send`): one round trip at COMMIT.
        try connection.send(
            """
            INSERT INTO device_states (app_id, user_id, device_id, version, state, status, provisional, platform, os_major, app_version, milestones)
            SELECT \(appID), u, d, v, s, st, p, pl, om, av, m
            FROM unnest(\(PostgresArray(devices.map { $0.key.userID })), \(PostgresArray(devices.map { $0.key.deviceID })),
                        \(PostgresArray(devices.map { $0.version })), \(PostgresArray(json: texts)),
                        \(PostgresArray(devices.map { $0.state.status.rawValue })),
                        \(PostgresArray(devices.map { $0.state.provisional ? "t" : "f" }, typeOID: PostgresType.boolArray)),
                        \(PostgresArray(devices.map { $0.state.context.platform?.rawValue }, typeOID: PostgresType.textArray)),
                        \(PostgresArray(devices.map { $0.state.context.osVersion.map { String($0.major) } }, typeOID: PostgresType.int8Array)),
                        \(PostgresArray(devices.map { $0.state.context.appVersion }, typeOID: PostgresType.textArray)),
                        \(PostgresArray(devices.map { Int64($0.milestones.rawValue) })))
                AS n(u, d, v, s, st, p, pl, om, av, m)
            ON CONFLICT (app_id, user_id, device_id) DO UPDATE SET
                version = excluded.version, state = excluded.state, status = excluded.status,
                provisional = excluded.provisional, platform = excluded.platform, os_major = excluded.os_major,
                app_version = excluded.app_version, milestones = excluded.milestones, updated_at = now()
            WHERE device_states.version <= excluded.version
            """)
    }

    /// Moves the devices of `devices` from their old states' counts to their new ones in
    /// `device_counts` (adding a state never seen before to `device_state_kinds`), in the
    /// append transaction. Rows go in the state's text order and in this backend's lane, so
    /// concurrent appends neither wait on each other's counters nor deadlock.
    static func count(appID: UUID, _ devices: [Row], replacing previous: [StreamKey: Row], on connection: PostgresConnection) throws {
        var deltas: [String: (count: Int64, state: DeviceState)] = [:]
        for device in devices {
            let old = previous[device.key]?.state
            guard old != device.state else { continue }
            if let old { deltas[old.storedJSON, default: (0, old)].count -= 1 }
            deltas[device.state.storedJSON, default: (0, device.state)].count += 1
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
                            \(PostgresArray(states.map { $0.context.osVersion.map { String($0.major) } }, typeOID: PostgresType.int8Array)),
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
