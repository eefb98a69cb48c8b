import Foundation
import PostgresClient

/// The "(erased)" fold (SPEC §13) as erasures and retention both run it: of the app versions
/// given, those only erased devices or erased events reported, and that no device is in a
/// state with now, have their counters moved into the group "(erased)"
/// (`locgate_fold_erased_app_versions`, which says exactly when a version is kept). Erasures
/// fold the versions of their counters, retention batches those of theirs, and `UnusedStates`
/// the versions of the states no device is in any more (a version kept while a device was in
/// a state with it). The caller holds the analytics rollup's lock, so that no counter moves
/// meanwhile.
enum ErasedVersions {
    /// Versions one fold statement looks at.
    static let batch = 500

    /// Folds `versions` (any number, each looked at once), `batch` a statement.
    static func fold(_ versions: [String], appID: UUID, on connection: PostgresConnection) throws {
        let distinct = Set(versions).sorted()
        for start in stride(from: 0, to: distinct.count, by: batch) {
            let slice = Array(distinct[start..<min(start + batch, distinct.count)])
            try connection.query("SELECT locgate_fold_erased_app_versions(\(appID), \(PostgresArray(slice)))")
        }
    }
}
