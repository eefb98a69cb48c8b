import Foundation

/// Delivers one request body to `POST /v1/events` and returns the raw answer.
///
/// The sender decides everything (what to retry, what to acknowledge); a transport only moves
/// bytes. That keeps the retry logic testable with a scripted transport, and lets an app bring
/// its own HTTP stack. `URLSessionEventTransport` is the default.
public protocol EventTransport: Sendable {
    /// Sends `body` (`{"events": [...]}`, JSON) and returns the HTTP status, the response headers
    /// (names in any case) and the body. Throws for a failure with no HTTP answer (no
    /// connection, a timeout), which the sender retries.
    func send(_ body: Data) async throws -> (status: Int, headers: [String: String], body: Data)
}
