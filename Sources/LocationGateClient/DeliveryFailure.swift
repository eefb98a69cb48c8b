import LocationAuthorization

/// An event the server refused for good, now dropped from the queue.
///
/// A refusal of one event (422 `validationFailed` or `ruleViolation`, 409 `versionConflict` or
/// `idConflict`, SPEC §5) will be refused again however often it is sent, and a rejected event
/// rejects its whole batch: keeping it would block every event behind it. So the sender drops
/// it, sends the rest, and reports it here for the app to log. With events built by
/// `EventRecorder` this means the server's rules and the device disagree, which is worth a look.
///
/// Only the server's own JSON error drops an event: a 4xx whose body is anything else (a
/// proxy's page) is retried.
public struct DeliveryFailure: Sendable, Hashable {
    /// The event as it was queued.
    public var submission: EventSubmission
    /// The HTTP status of the refusal.
    public var status: Int
    /// The error code of the server's body (`ruleViolation`, ...).
    public var code: String?
    public var message: String

    public init(submission: EventSubmission, status: Int, code: String?, message: String) {
        self.submission = submission
        self.status = status
        self.code = code
        self.message = message
    }
}
