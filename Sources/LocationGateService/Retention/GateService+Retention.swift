import Foundation
import Logging
import PostgresClient

extension GateService {
    /// The app's retention in days; nil keeps everything (the default).
    public func retentionDays(appID: UUID) async throws(ServiceError) -> Int? {
        try await database {
            try await pool.query("SELECT retention_days FROM apps WHERE id = \(appID)").first?.decodeIfPresent(0, as: Int.self)
        }
    }

    /// Sets the app's retention (1...36500 days, or nil to keep everything); the next run of
    /// the schedule applies it.
    public func setRetentionDays(appID: UUID, days: Int?) async throws(ServiceError) {
        if let days, !Self.retentionRange.contains(days) {
            throw ServiceError(.validationFailed, "days: a whole number of days from 1 to 36500, or null to keep everything")
        }
        try await database {
            if let days {
                try await pool.query("UPDATE apps SET retention_days = \(days) WHERE id = \(appID)")
            } else {
                try await pool.query("UPDATE apps SET retention_days = NULL WHERE id = \(appID)")
            }
        }
    }

    public static let retentionRange = 1...36500

    /// The retention schedule of this process.
    public func retentionWorker(logger: Logger, interval: Duration) -> RetentionWorker {
        RetentionWorker(retention: Retention(pool: pool, logger: logger), logger: logger, interval: interval)
    }
}

extension GateService {
    /// One run of the retention schedule, measured against `now`.
    public func runRetention(now: Date = Date()) async throws -> Retention.Report {
        try await Retention(pool: pool, logger: logger).run(now: now)
    }
}
