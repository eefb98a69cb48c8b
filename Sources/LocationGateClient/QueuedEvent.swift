import Foundation
import LocationAuthorization

/// A pending event as the queue holds it: the submission, and the exact JSON the journal holds,
/// which is also what is sent, so that a retry sends the same bytes.
struct QueuedEvent: Sendable {
    /// As read back from its JSON, so that it compares equal before and after a reopen (times
    /// keep the milliseconds RFC 3339 keeps).
    var submission: EventSubmission
    var payload: Data

    /// What the event costs against `maxBytes`: its record in the journal.
    var recordSize: Int { QueueRecord.headerSize + payload.count }
}
