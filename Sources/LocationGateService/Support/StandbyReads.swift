import Logging
import Metrics
import PostgresClient

/// Reads that may lag (history, state as of, analytics, the replay's reads) on a streaming
/// standby (`LOCGATE_READ_DATABASE_URL`), so that they do not load the primary. Gates and
/// appends never come here.
///
/// Analytics and `verify` promise to count everything acknowledged before the call: they first
/// wait until the standby has replayed the primary's WAL position at the call
/// (`caughtUp(patience:)`), and read the primary when the standby is further behind than their
/// patience. History and state may lag: they read the standby as it is.
public struct StandbyReads: Sendable {
    /// The primary's pool (appends, rollup writes).
    public let primary: PostgresConnectionPool
    /// The standby's pool; the primary's when no standby is configured.
    public let pool: PostgresConnectionPool

    private let fallbacks = Counter(label: "locgate_standby_read_fallbacks_total")

    public init(primary: PostgresConnectionPool, standby: PostgresConnectionPool? = nil) {
        self.primary = primary
        self.pool = standby ?? primary
    }

    /// Whether reads go to a pool other than the primary's.
    public var hasStandby: Bool { pool !== primary }

    /// The standby's pool, nil without one.
    public var standby: PostgresConnectionPool? { hasStandby ? pool : nil }

    /// Runs `body` on the standby (`true`), or on the primary (`false`) when there is none or
    /// the standby cannot answer (down, restarting, out of connections): a lagging read is
    /// better served late by the primary than refused.
    public func read<T>(_ body: (_ onStandby: Bool) async throws -> T) async throws -> T {
        guard hasStandby else { return try await body(false) }
        do {
            return try await body(true)
        } catch let error as PostgresError where error.isUnavailable {
            fallbacks.increment()
            return try await body(false)
        }
    }

    /// A pool that has everything the primary had committed at the call: the standby once it
    /// has replayed that far (polled with `PollBackoff`, for at most `patience`), else the primary
    /// (also when the standby cannot answer).
    public func caughtUp(patience: Duration = .seconds(2)) async throws -> PostgresConnectionPool {
        guard hasStandby else { return primary }
        let target = try await primary.query("SELECT pg_current_wal_lsn()::text").first?.decode(0, as: String.self) ?? "0/0"
        let deadline = ContinuousClock.now + patience
        var backoff = PollBackoff()
        while true {
            // A server not in recovery (promoted, or the read URL names a primary) has it all.
            let replayed: Bool
            do {
                replayed = try await pool.query(
                    "SELECT NOT pg_is_in_recovery() OR pg_last_wal_replay_lsn() >= \(target)::pg_lsn"
                ).first?.decode(0, as: Bool.self) ?? false
            } catch let error as PostgresError where error.isUnavailable {
                fallbacks.increment()
                return primary
            }
            if replayed { return pool }
            guard ContinuousClock.now < deadline else {
                fallbacks.increment()
                return primary
            }
            try await Task.sleep(for: backoff.next() ?? .milliseconds(100))
        }
    }
}
