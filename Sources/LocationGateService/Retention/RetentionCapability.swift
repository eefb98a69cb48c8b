import Foundation
import Logging
import PostgresClient

/// Retention (SPEC §13): each app's days, the schedule that erases what is older, its runs
/// from the command line, and their records. The HTTP layer sees it as `RetentionService`.
public final class RetentionCapability: Sendable, DatabaseCalls {
    let pool: PostgresConnectionPool
    let logger: Logger

    init(pool: PostgresConnectionPool, logger: Logger) {
        self.pool = pool
        self.logger = logger
    }

    /// The app's retention in days; nil keeps everything (the default).
    public func retentionDays(appID: UUID) async throws(ServiceError) -> Int? {
        try await database {
            try await pool.query("SELECT retention_days FROM apps WHERE id = \(appID)").first?.decodeIfPresent(0, as: Int.self)
        }
    }

    /// Sets the app's retention (1...36500 days, or nil to keep everything); the next run of
    /// the schedule applies it. `retentionSet` is recorded in the same transaction (SPEC §14).
    public func setRetentionDays(appID: UUID, days: Int?, actor: AuditActor) async throws(ServiceError) {
        if let days, !Self.retentionRange.contains(days) {
            throw ServiceError(.validationFailed, "days: a whole number of days from 1 to 36500, or null to keep everything")
        }
        try await database {
            try await pool.transaction { connection in
                let updated: PostgresRows
                if let days {
                    updated = try connection.query("UPDATE apps SET retention_days = \(days) WHERE id = \(appID)")
                } else {
                    updated = try connection.query("UPDATE apps SET retention_days = NULL WHERE id = \(appID)")
                }
                guard updated.affectedRows > 0 else { return }
                try AdminAuditLog.record(
                    AuditChange(
                        appID: appID, actor: actor, action: .retentionSet, target: appID.lowercasedText,
                        details: ["days": days.map(AuditDetail.int) ?? .null]),
                    on: connection)
            }
        }
    }

    public static let retentionRange = 1...36500

    /// The retention schedule of this process.
    public func retentionWorker(logger: Logger, interval: Duration) -> RetentionWorker {
        RetentionWorker(retention: Retention(pool: pool, logger: logger), logger: logger, interval: interval)
    }

    /// One run of the retention schedule, measured against `now`. The counting readers catch
    /// up first (`catchUpCounts`).
    public func runRetention(now: Date = Date()) async throws -> Retention.Report {
        try await catchUpCounts()
        return try await Retention(pool: pool, logger: logger).run(now: now)
    }

    /// A run of one app's retention now (`locgate retention run`), for at most `budget`. The
    /// counting readers catch up first (`catchUpCounts`).
    public func runRetention(appID: UUID, now: Date = Date(), budget: Duration = .seconds(60)) async throws -> Retention.Report {
        try await catchUpCounts()
        return try await Retention(pool: pool, logger: logger).run(now: now, budget: budget, appID: appID)
    }

    /// The analytics rollup and the experiments' tally count what is readable now, as a
    /// server's would have within a second: a run takes only events both have counted
    /// (`Retention.countedThrough`), so a run outside a server (the CLI) would otherwise erase
    /// nothing new.
    func catchUpCounts() async throws {
        _ = try await AnalyticsRollup(pool: pool, logger: logger).catchUp(waitForInFlightCommits: true, patience: .seconds(60))
        _ = try await ExperimentTally(pool: pool, logger: logger).catchUp(patience: .seconds(60))
    }

    /// The app's last retention run (`lastRun`), one that erased nothing included; nil before
    /// its first.
    public func lastRetentionRun(appID: UUID) async throws(ServiceError) -> Retention.LastRun? {
        try await database { try await pool.withConnection { try Retention.lastRun(appID: appID, on: $0) } }
    }

    /// What a run of the app's retention measured against `now` would erase, erasing and
    /// recording nothing (`locgate retention run --dry-run`); nil when the app keeps everything.
    /// The counting readers catch up first, as before `runRetention(appID:)`, so that the two
    /// count the same events.
    public func previewRetention(appID: UUID, now: Date = Date()) async throws -> Retention.Preview? {
        try await catchUpCounts()
        return try await pool.withConnection { try Retention.preview(appID: appID, now: now, on: $0) }
    }
}
