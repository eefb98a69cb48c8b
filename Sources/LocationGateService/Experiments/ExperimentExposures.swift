import EventLog
import Foundation
import LocationAuthorization
import PostgresClient

/// The statements of `experiment_exposures` that evaluations, the export and the counts use
/// (SPEC §16): a device's current exposure, recording one, and a stream's installation.
enum ExperimentExposures {
    /// The log's global position now, as SQL: the last position the log handed out (0 before
    /// the first). Every event inserted later has a greater one, so "an answer to a prompt
    /// shown at a later position" means shown after this was read. Positions are handed out at
    /// insert, before commit: an event inserted just before and committed just after counts as
    /// before, which it was.
    static let logPosition = "coalesce(pg_sequence_last_value('events_position_seq'::regclass), 0)"

    /// The device's current exposure: the first of `units` (in the order given, as
    /// `ExperimentUnit.candidates` lists them) with an exposure no reinstall replaced.
    static func current(appID: UUID, key: String, units: [ExperimentUnit], on connection: PostgresConnection) throws -> ExperimentExposure? {
        let rows = try connection.query(
            """
            SELECT unit, variant, exposed_at FROM experiment_exposures
            WHERE app_id = \(appID) AND experiment_key = \(key) AND unit = ANY(\(PostgresArray(units.map(\.text))))
              AND replaced_position IS NULL
            """)
        var found: [String: ExperimentExposure] = [:]
        for row in rows {
            let text: String = try row.decode(0)
            guard let unit = ExperimentUnit(text: text) else { continue }
            found[text] = ExperimentExposure(unit: unit, variant: try row.decode(1), exposedAt: try row.decode(2, as: Date.self))
        }
        return units.lazy.compactMap { found[$0.text] }.first
    }

    /// Records `unit`'s exposure to `variant`, durably (one statement, committed before the
    /// answer), with the log's position and the variant's `exposed` count in the same
    /// statement; or, when another evaluation (on any server) recorded the unit first, reads
    /// that one, so that two racing agree on one variant. Nil when the experiment no longer
    /// runs with that variant (stopped, deleted, or deleted and made again since the caller
    /// read it): nothing is recorded after a stop.
    static func record(
        appID: UUID, key: String, unit: ExperimentUnit, variant: String, stream: StreamKey, on connection: PostgresConnection
    ) throws -> ExperimentExposure? {
        let variantJSON = #"[{"key":"# + jsonString(variant) + "}]"
        let inserted = try connection.query(
            """
            WITH exposed AS (
                INSERT INTO experiment_exposures (app_id, experiment_key, unit, variant, exposed_position, user_id, device_id)
                SELECT \(appID), \(key), \(unit.text), \(variant), \(unescaped: logPosition), \(stream.userID), \(stream.deviceID)
                WHERE EXISTS (
                    SELECT 1 FROM experiments
                    WHERE app_id = \(appID) AND key = \(key) AND state = 'running'
                      AND definition->'variants' @> \(PostgresJSON(variantJSON)))
                ON CONFLICT (app_id, experiment_key, unit) DO NOTHING
                RETURNING variant, exposed_at
            ), counted AS (
                INSERT INTO experiment_counts (app_id, experiment_key, variant, lane, exposed)
                SELECT \(appID), \(key), variant, \(unescaped: ExperimentCounts.lane), 1 FROM exposed
                ON CONFLICT (app_id, experiment_key, variant, lane) DO UPDATE SET exposed = experiment_counts.exposed + 1
            )
            SELECT variant, exposed_at FROM exposed
            """)
        if let row = inserted.first {
            return ExperimentExposure(unit: unit, variant: try row.decode(0), exposedAt: try row.decode(1, as: Date.self))
        }
        // Recorded by another evaluation first (the race's one variant), or not running.
        let stored = try connection.query(
            """
            SELECT variant, exposed_at FROM experiment_exposures
            WHERE app_id = \(appID) AND experiment_key = \(key) AND unit = \(unit.text)
            """)
        return try stored.first.map { row in
            ExperimentExposure(unit: unit, variant: try row.decode(0), exposedAt: try row.decode(1, as: Date.self))
        }
    }

    /// The stream's `installId` and the version it is of, from `device_states` (where the
    /// projection keeps it beside the state); version 0 and none for a stream with no events.
    static func installation(_ stream: StreamKey, on connection: PostgresConnection) throws -> ExposureMemory.Installation {
        guard let row = try connection.query(
            """
            SELECT version, install_id FROM device_states
            WHERE app_id = \(stream.appID) AND user_id = \(stream.userID) AND device_id = \(stream.deviceID)
            """
        ).first else { return ExposureMemory.Installation(version: 0, installID: nil) }
        return ExposureMemory.Installation(version: try row.decode(0), installID: try row.decodeIfPresent(1, as: String.self))
    }

    /// One exposure as a person's export lists it (SPEC §13, §16).
    struct Listed: Sendable, Hashable, Encodable {
        var experiment: String
        var exposedAt: String
        var variant: String
    }

    /// The exposures first evaluated on a stream, by experiment key: what a person's export
    /// lists for the device (and what erasing it removes).
    static func listed(_ stream: StreamKey, on connection: PostgresConnection) throws -> [Listed] {
        try connection.query(
            """
            SELECT experiment_key, variant, exposed_at FROM experiment_exposures
            WHERE app_id = \(stream.appID) AND user_id = \(stream.userID) AND device_id = \(stream.deviceID)
            ORDER BY experiment_key COLLATE "C", exposed_at
            """
        ).map { row in
            Listed(
                experiment: try row.decode(0), exposedAt: RFC3339.string(from: try row.decode(2, as: Date.self)),
                variant: try row.decode(1))
        }
    }

    /// Deletes the exposures first evaluated on the person's streams (one device's, with
    /// `deviceID`): an erasure (SPEC §16 "Erasure"). The counts stay; they name no one.
    static func erase(appID: UUID, userID: String, deviceID: String?, on connection: PostgresConnection) throws {
        if let deviceID {
            try connection.query(
                "DELETE FROM experiment_exposures WHERE app_id = \(appID) AND user_id = \(userID) AND device_id = \(deviceID)")
        } else {
            try connection.query("DELETE FROM experiment_exposures WHERE app_id = \(appID) AND user_id = \(userID)")
        }
    }

    /// A string as a JSON string literal (variant keys are `[A-Za-z0-9._-]`, checked; escaped
    /// all the same).
    private static func jsonString(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            default:
                if scalar.value < 0x20 {
                    out += String(format: "\\u%04x", scalar.value)
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }
}
