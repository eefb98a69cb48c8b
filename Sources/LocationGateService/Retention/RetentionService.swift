import Foundation

/// The retention face of the service (SPEC §13): how many days an app's events are kept.
public protocol RetentionService: Sendable {
    /// The app's retention in days; nil keeps everything (the default).
    func retentionDays(appID: UUID) async throws(ServiceError) -> Int?
    /// Sets the app's retention (1...36500 days, or nil to keep everything), recorded in the
    /// admin audit trail.
    func setRetentionDays(appID: UUID, days: Int?, actor: AuditActor) async throws(ServiceError)
    /// The app's last retention run (`lastRun`), one that erased nothing included; nil before
    /// its first.
    func lastRetentionRun(appID: UUID) async throws(ServiceError) -> Retention.LastRun?
}

extension RetentionCapability: RetentionService {}
