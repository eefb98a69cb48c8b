import EventLog
import Foundation

/// The audit face of the service: a device's history and its state as of a time or a version
/// (SPEC §5), read from the log (the standby when one is configured).
public protocol HistoryReading: Sendable {
    /// The stream's events after `afterVersion`, at most `limit`, with each one's outcome.
    func history(_ key: StreamKey, afterVersion: Int64, limit: Int) async throws(ServiceError) -> HistoryPage
    /// The state after `version` events, or as of `asOf`, with the decisions it gives.
    func state(_ key: StreamKey, asOf: Date?, version: Int64?) async throws(ServiceError) -> StateView
}

extension AuditCapability: HistoryReading {}
