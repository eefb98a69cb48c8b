import EventLog
import Foundation

/// The change feed face of the service (`GET /v1/changes`): an app's committed events in the
/// log's global order, from a position, and the hints that wake its readers.
public protocol ChangeFeedReading: ChangeHints {
    /// The app's committed events after `position`, in global order, at most `limit`.
    func changes(appID: UUID, after position: LogPosition, limit: Int) async throws(ServiceError) -> [ChangeMessage]
    /// Where a feed that starts now begins.
    func feedHead() async throws(ServiceError) -> LogPosition
}

extension PushCapability: ChangeFeedReading {}
