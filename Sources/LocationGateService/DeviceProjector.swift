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
    private let projected = Mutex<[(StreamKey, Int64, DeviceState)]>([])

    init(events: [Int: LocationEvent]) {
        self.events = events
    }

    /// The states the append wrote, for the cache once it has committed.
    var states: [(StreamKey, Int64, DeviceState)] { projected.withLock { $0 } }

    func project(_ appends: [StreamAppend], on connection: PostgresConnection) throws -> [[String?]] {
        guard let appID = appends.first?.stream.appID else { return [] }
        var current = try DeviceStateStore.load(appID: appID, keys: appends.map(\.stream), on: connection)
        var outcomes: [[String?]] = []
        var written: [(StreamKey, Int64, DeviceState)] = []
        for append in appends {
            var state = current[append.stream]?.state ?? DeviceState()
            var streamOutcomes: [String?] = []
            for planned in append.events {
                guard let event = events[planned.index] else {
                    throw ServiceError(.invalidRequest, "event \(planned.index) was not decoded", index: planned.index)
                }
                let before = state.summary
                let effects: [Effect]
                do {
                    effects = try state.apply(event)
                } catch {
                    throw EventLogError.rejected(index: planned.index, reason: error)
                }
                streamOutcomes.append(try JSONText.encode(EventOutcome(effects: effects, before: before, after: state.summary)))
            }
            let version = append.events.last?.version ?? append.previousVersion
            current[append.stream] = DeviceStateCache.Entry(version: version, state: state)
            written.append((append.stream, version, state))
            outcomes.append(streamOutcomes)
        }
        try DeviceStateStore.save(appID: appID, written.map { ($0.0, $0.1, $0.2) }, on: connection)
        projected.withLock { $0 = written }
        return outcomes
    }
}

/// Reads and writes the `device_states` projection.
public enum DeviceStateStore {
    static func load(appID: UUID, keys: [StreamKey], on connection: PostgresConnection) throws -> [StreamKey: DeviceStateCache.Entry] {
        let rows = try connection.query(
            """
            SELECT s.user_id, s.device_id, s.version, s.state::text FROM device_states s
            JOIN unnest(\(PostgresArray(keys.map(\.userID))), \(PostgresArray(keys.map(\.deviceID)))) AS k(u, d)
              ON s.user_id = k.u AND s.device_id = k.d
            WHERE s.app_id = \(appID)
            """)
        var states: [StreamKey: DeviceStateCache.Entry] = [:]
        for row in rows {
            let key = StreamKey(appID: appID, userID: try row.decode(0), deviceID: try row.decode(1))
            states[key] = DeviceStateCache.Entry(
                version: try row.decode(2), state: try JSONText.decode(DeviceState.self, try row.decode(3)))
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
            (try row.decode(0), DeviceStateCache.Entry(version: try row.decode(1), state: try JSONText.decode(DeviceState.self, try row.decode(2))))
        }
    }

    static func save(appID: UUID, _ states: [(StreamKey, Int64, DeviceState)], on connection: PostgresConnection) throws {
        guard !states.isEmpty else { return }
        let texts = try states.map { try JSONText.encode($0.2) }
        try connection.query(
            """
            INSERT INTO device_states (app_id, user_id, device_id, version, state, status, provisional, platform, os_major, app_version)
            SELECT \(appID), u, d, v, s, st, p, pl, om, av
            FROM unnest(\(PostgresArray(states.map { $0.0.userID })), \(PostgresArray(states.map { $0.0.deviceID })),
                        \(PostgresArray(states.map { $0.1 })), \(PostgresArray(json: texts)),
                        \(PostgresArray(states.map { $0.2.status.rawValue })),
                        \(PostgresArray(states.map { $0.2.provisional ? "t" : "f" }, typeOID: PostgresType.boolArray)),
                        \(PostgresArray(states.map { $0.2.context.platform?.rawValue }, typeOID: PostgresType.textArray)),
                        \(PostgresArray(states.map { $0.2.context.osVersion.map { String($0.major) } }, typeOID: PostgresType.int8Array)),
                        \(PostgresArray(states.map { $0.2.context.appVersion }, typeOID: PostgresType.textArray)))
                AS n(u, d, v, s, st, p, pl, om, av)
            ON CONFLICT (app_id, user_id, device_id) DO UPDATE SET
                version = excluded.version, state = excluded.state, status = excluded.status,
                provisional = excluded.provisional, platform = excluded.platform, os_major = excluded.os_major,
                app_version = excluded.app_version, updated_at = now()
            """)
    }
}
