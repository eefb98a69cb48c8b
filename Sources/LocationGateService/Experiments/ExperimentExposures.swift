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

    /// The device's current exposures to the experiments `keys`, by key: for each, the first
    /// of `units` (in the order given, as `ExperimentUnit.candidates` lists them) with an
    /// exposure no reinstall replaced. One read for every experiment a bulk evaluation lacks.
    ///
    /// `ExperimentTally` marks exposures replaced when it counts I1's reinstall, which can be
    /// after the next evaluation. So a `device:` exposure is also taken as replaced when its
    /// stream logged a reinstall (`reset` for `reinstalled`) after it: the stream's events
    /// after the exposure, read through the stream's index, only when the exposure's row is
    /// read (an exposed device's evaluations answer from memory). An `install:` unit needs no
    /// such check: a reinstall changes the `installId`, so the replaced unit is no candidate.
    static func current(
        appID: UUID, keys: [String], units: [ExperimentUnit], on connection: PostgresConnection
    ) throws -> [String: ExperimentExposure] {
        let rows = try connection.query(
            """
            SELECT experiment_key, unit, variant, exposed_at FROM experiment_exposures AS x
            WHERE app_id = \(appID) AND experiment_key = ANY(\(PostgresArray(keys)))
              AND unit = ANY(\(PostgresArray(units.map(\.text)))) AND replaced_position IS NULL
              AND (unit NOT LIKE 'device:%' OR NOT EXISTS (
                  SELECT 1 FROM events AS e
                  WHERE e.app_id = x.app_id AND e.user_id = x.user_id AND e.device_id = x.device_id
                    AND e.position > x.exposed_position
                    AND e.outcome->'effects' @> '[{"kind": "reset", "reason": "reinstalled"}]'))
            """)
        var found: [String: [String: ExperimentExposure]] = [:]
        for row in rows {
            let key: String = try row.decode(0)
            let text: String = try row.decode(1)
            guard let unit = ExperimentUnit(text: text) else { continue }
            found[key, default: [:]][text] = ExperimentExposure(
                unit: unit, variant: try row.decode(2), exposedAt: try row.decode(3, as: Date.self))
        }
        var current: [String: ExperimentExposure] = [:]
        for (key, byUnit) in found {
            if let first = units.lazy.compactMap({ byUnit[$0.text] }).first { current[key] = first }
        }
        return current
    }

    /// Records a group of exposures (`ExposureCommitter`), each unit once, durably: one
    /// statement, its own transaction, that inserts every exposure whose experiment still runs
    /// with its variant, with the log's position then, and adds each variant's new exposures to
    /// its `exposed` count (this backend's lane, the variants in one order); then one read of
    /// the units that another evaluation (on any server) recorded first, so that racing
    /// evaluations agree on one variant. Returns the stored exposure of each place that has
    /// one; a place without one is of an experiment that no longer runs with that variant
    /// (stopped, deleted, or deleted and made again since the caller read it): nothing is
    /// recorded after a stop.
    ///
    /// The insert's rows go in the order given (`WITH ORDINALITY`): callers give every group in
    /// one order, so that two groups that insert the same units wait for each other rather than
    /// deadlock. A conflicting row another transaction is writing makes the insert wait for its
    /// end, and the read after the insert sees it committed.
    static func record(
        _ exposures: [ExposureCommitter.Exposing], on connection: PostgresConnection
    ) throws -> [ExposureCommitter.Place: ExperimentExposure] {
        guard !exposures.isEmpty else { return [:] }
        let inserted = try connection.query(
            """
            WITH log_position AS (
                SELECT \(unescaped: logPosition) AS log_at
            ), wanted AS (
                SELECT * FROM unnest(
                    \(PostgresArray(exposures.map(\.appID)))::uuid[], \(PostgresArray(exposures.map(\.experiment)))::text[],
                    \(PostgresArray(exposures.map(\.unit.text)))::text[], \(PostgresArray(exposures.map(\.variant)))::text[],
                    \(PostgresArray(exposures.map(\.stream.userID)))::text[], \(PostgresArray(exposures.map(\.stream.deviceID)))::text[]
                ) WITH ORDINALITY AS w (app_id, experiment_key, unit, variant, user_id, device_id, ord)
            ), exposed AS (
                INSERT INTO experiment_exposures (app_id, experiment_key, unit, variant, exposed_position, user_id, device_id)
                SELECT w.app_id, w.experiment_key, w.unit, w.variant, p.log_at, w.user_id, w.device_id
                FROM wanted AS w CROSS JOIN log_position AS p
                WHERE EXISTS (
                    SELECT 1 FROM experiments AS e
                    WHERE e.app_id = w.app_id AND e.key = w.experiment_key AND e.state = 'running'
                      AND e.definition->'variants' @> jsonb_build_array(jsonb_build_object('key', w.variant)))
                ORDER BY w.ord
                ON CONFLICT (app_id, experiment_key, unit) DO NOTHING
                RETURNING app_id, experiment_key, unit, variant, exposed_at
            ), counted AS (
                INSERT INTO experiment_counts (app_id, experiment_key, variant, lane, exposed)
                SELECT app_id, experiment_key, variant, \(unescaped: ExperimentCounts.lane), count(*) FROM exposed
                GROUP BY app_id, experiment_key, variant
                ORDER BY app_id, experiment_key COLLATE "C", variant COLLATE "C"
                ON CONFLICT (app_id, experiment_key, variant, lane)
                DO UPDATE SET exposed = experiment_counts.exposed + excluded.exposed
            )
            SELECT app_id, experiment_key, unit, variant, exposed_at FROM exposed
            """)
        var stored: [ExposureCommitter.Place: ExperimentExposure] = [:]
        stored.reserveCapacity(exposures.count)
        try read(inserted, into: &stored)
        // Recorded by another evaluation first (the race's one variant), or not running.
        let missing = exposures.filter { stored[$0.place] == nil }
        guard !missing.isEmpty else { return stored }
        let found = try connection.query(
            """
            SELECT x.app_id, x.experiment_key, x.unit, x.variant, x.exposed_at
            FROM unnest(
                \(PostgresArray(missing.map(\.appID)))::uuid[], \(PostgresArray(missing.map(\.experiment)))::text[],
                \(PostgresArray(missing.map(\.unit.text)))::text[]
            ) AS w (app_id, experiment_key, unit)
            JOIN experiment_exposures AS x
              ON x.app_id = w.app_id AND x.experiment_key = w.experiment_key AND x.unit = w.unit
            """)
        try read(found, into: &stored)
        return stored
    }

    /// Rows of `(app_id, experiment_key, unit, variant, exposed_at)`, by their place.
    private static func read(_ rows: PostgresRows, into stored: inout [ExposureCommitter.Place: ExperimentExposure]) throws {
        for row in rows {
            let text: String = try row.decode(2)
            guard let unit = ExperimentUnit(text: text) else { continue }
            let place = ExposureCommitter.Place(appID: try row.decode(0, as: UUID.self), experiment: try row.decode(1), unit: text)
            stored[place] = ExperimentExposure(unit: unit, variant: try row.decode(3), exposedAt: try row.decode(4, as: Date.self))
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
}
