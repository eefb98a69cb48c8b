/// What one `flush()` did.
public struct FlushSummary: Sendable, Hashable {
    /// Events the server acknowledged, duplicates included.
    public var delivered = 0
    /// Of those, the ones it already had: a retry whose first answer was lost.
    public var duplicates = 0
    /// Events refused for good and dropped (each also reported as a `DeliveryFailure`).
    public var rejected = 0
    /// Waits before a retry: no answer, 429, 503, a server fault, or an answer that was not the
    /// server's (a redirect, a captive portal's or a proxy's page).
    public var retries = 0

    public init() {}
}
