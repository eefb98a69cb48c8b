import Foundation
import PostgresClient

/// What erasures and retention would otherwise leave of client text in the maintained counts
/// (SPEC §13). `device_counts` keeps a row for every state devices have been in, at zero once
/// they all left it, and `device_state_kinds` the state's JSON (its app version, session keys,
/// purpose keys) for as long as anything refers to it: after the devices that reported them
/// are erased, or have moved on from a version that only erased events reported, that text
/// can name someone.
///
/// `forget(appID:on:)` runs before an erasure is `done` and at the end of each app's retention
/// run:
///
/// 1. it folds into "(erased)" the app versions of the states no device of the app is in now
///    (`ErasedVersions`, which says when a version stays): a version kept earlier because a
///    device was in a state with it goes once that device is erased or has upgraded, whether or
///    not the rollup had counted its last events;
/// 2. it deletes the app's rows of those states and the states that nothing refers to any more
///    (`locgate_forget_unused_states`), `statesPerTransaction` at a time, with the states whose
///    last snapshot an erasure deleted (`state_kind_checks`).
///
/// Each transaction holds the analytics rollup's lock, as erasure pages and retention batches
/// do, and none holds a transaction id while it waits for a lock (the change feed reads below
/// the oldest running transaction: SPEC §5). The deletion takes `device_state_kinds` in SHARE
/// mode: appends that move a device into a state wait for it meanwhile, a moment, and it waits
/// for those under way at most `dictionaryLockTimeout` (it is tried again at the next run).
enum UnusedStates {
    /// States one deletion looks at: appends wait for one such transaction at most.
    static let statesPerTransaction = 1000
    /// Entries of `state_kind_checks` one call takes.
    static let checksPerCall = 10_000
    /// How long a transaction waits for the rollup's lock.
    static let lockTimeout = "5s"
    /// How long the deletion waits for the appends under way (new appends queue behind it).
    static let dictionaryLockTimeout = "500ms"

    /// Folds the versions of the app's states that no device is in, and forgets the states
    /// nothing refers to; returns the states deleted from the dictionary.
    @discardableResult
    static func forget(appID: UUID, on connection: PostgresConnection) throws -> Int {
        // Read without a lock: each state is checked again under the locks.
        var states: [Int64] = []
        var versions: Set<String> = []
        for row in try connection.query(
            """
            SELECT state_id, min(app_version) FROM device_counts WHERE app_id = \(appID)
            GROUP BY state_id HAVING sum(devices) = 0
            """
        ) {
            states.append(try row.decode(0))
            if let version = try row.decodeIfPresent(1, as: String.self) { versions.insert(version) }
        }
        states += try connection.query("SELECT state_id FROM state_kind_checks ORDER BY state_id LIMIT \(checksPerCall)")
            .map { try $0.decode(0, as: Int64.self) }
        if !versions.isEmpty {
            try connection.transaction { connection in
                try connection.query("SET LOCAL lock_timeout = '\(unescaped: lockTimeout)'")
                try connection.query("SELECT pg_advisory_xact_lock(\(AnalyticsRollup.lockKey))")
                try ErasedVersions.fold(Array(versions), appID: appID, on: connection)
            }
        }
        var forgotten = 0
        for chunk in Set(states).sorted().chunks(of: statesPerTransaction) {
            forgotten += try connection.transaction { connection -> Int in
                try connection.query("SET LOCAL lock_timeout = '\(unescaped: lockTimeout)'")
                try connection.query("SELECT pg_advisory_xact_lock(\(AnalyticsRollup.lockKey))")
                try connection.query("SET LOCAL lock_timeout = '\(unescaped: dictionaryLockTimeout)'")
                return try connection.query("SELECT locgate_forget_unused_states(\(appID), \(PostgresArray(Array(chunk))))")
                    .first?.decode(0, as: Int.self) ?? 0
            }
        }
        return forgotten
    }
}
