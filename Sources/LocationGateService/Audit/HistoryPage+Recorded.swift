import EventLog
import Foundation
import LocationAuthorization
import LocationGateJSON
import PostgresClient

extension HistoryPage.Entry {
    /// A stored event as the history endpoint and the export show it: its data as it was
    /// stored, its outcome's effects and the status before and after.
    init(_ recorded: RecordedEvent) throws(ServiceError) {
        guard let outcome = try? JSONText.outcome(recorded.outcome ?? "{}"), let data = JSONNode.parse(recorded.data) else {
            throw ServiceError(.internalError, "event \(recorded.version) of the stream could not be read")
        }
        self.init(
            version: recorded.version, id: recorded.id.lowercasedText, type: recorded.type, data: data,
            occurredAt: RFC3339.string(from: recorded.occurredAt), recordedAt: RFC3339.string(from: recorded.recordedAt),
            effects: outcome.effects, before: outcome.before, after: outcome.after)
    }
}
