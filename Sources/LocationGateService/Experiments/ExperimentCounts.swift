import Foundation
import LocationAuthorization
import PostgresClient

/// `experiment_counts` (migration 023): exposed, answered and granted per variant, added to in
/// the transaction that records the exposure or the answer, so that results and the guard read
/// at most the variants × the lanes, never the exposures (SPEC §16: results within 100 ms for a
/// million exposed units).
enum ExperimentCounts {
    /// The lane a writer adds to, as SQL: its backend's pid modulo 16 (as `device_counts`,
    /// migration 006), so that concurrent writers seldom wait on one counter row.
    static let lane = "(pg_backend_pid() % 16)::smallint"

    /// What to add to one variant's counts.
    struct Change: Hashable, Sendable {
        var answered: Int64 = 0
        var granted: Int64 = 0
    }

    /// A variant of an experiment of an app: what a change is added to.
    struct Variant: Hashable, Sendable {
        var appID: UUID
        var experiment: String
        var variant: String
    }

    /// The experiment's counts per variant, the lanes summed.
    static func read(appID: UUID, key: String, on connection: PostgresConnection) throws -> [VariantCounts] {
        try connection.query(
            """
            SELECT variant, sum(exposed)::bigint, sum(answered)::bigint, sum(granted)::bigint FROM experiment_counts
            WHERE app_id = \(appID) AND experiment_key = \(key)
            GROUP BY variant
            """
        ).map { row in
            VariantCounts(
                variant: try row.decode(0), exposed: Int(try row.decode(1, as: Int64.self)),
                answered: Int(try row.decode(2, as: Int64.self)), granted: Int(try row.decode(3, as: Int64.self)))
        }
    }

    /// Adds answers and grants, in a stable order (so that concurrent writers lock rows in the
    /// same order), in the caller's transaction.
    static func add(_ changes: [Variant: Change], on connection: PostgresConnection) throws {
        let sorted = changes.filter { $0.value != Change() }.sorted {
            ($0.key.appID.lowercasedText, $0.key.experiment, $0.key.variant) < ($1.key.appID.lowercasedText, $1.key.experiment, $1.key.variant)
        }
        for (variant, change) in sorted {
            try connection.query(
                """
                INSERT INTO experiment_counts (app_id, experiment_key, variant, lane, answered, granted)
                VALUES (\(variant.appID), \(variant.experiment), \(variant.variant), \(unescaped: lane), \(change.answered), \(change.granted))
                ON CONFLICT (app_id, experiment_key, variant, lane)
                DO UPDATE SET answered = experiment_counts.answered + excluded.answered,
                              granted = experiment_counts.granted + excluded.granted
                """)
        }
    }
}
