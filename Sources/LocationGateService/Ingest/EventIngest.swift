import Foundation
import LocationAuthorization

/// The ingest face of the service: what `POST /v1/events` needs of it.
public protocol EventIngest: Sendable {
    /// Appends a batch of decoded submissions atomically through the projection, and answers
    /// each event's result (`duplicate` for an id stored already).
    func ingest(appID: UUID, submissions: [EventSubmission]) async throws(ServiceError) -> [EventResult]
}

extension IngestCapability: EventIngest {}
