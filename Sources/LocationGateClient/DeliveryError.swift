/// Why the sender stopped sending. The queue keeps every event; nothing was dropped.
public enum DeliveryError: Error, Sendable, Hashable, CustomStringConvertible {
    /// 401 or 403: the key is wrong, revoked, or lacks the `ingest` scope. Retrying would not
    /// fix it, and would only load the server; ship a working key and call `flush()` again.
    case unauthorized(status: Int, message: String)
    /// The server's own JSON error with a status the sender has no rule for (404, 405, ...):
    /// the base URL reaches a LocationGate server, but not its API. Or a status outside
    /// 200-599. (A 4xx that is not the server's JSON is retried: it came from something in
    /// between, a captive portal or a proxy.)
    case unexpectedStatus(Int, message: String)

    public var description: String {
        switch self {
        case .unauthorized(let status, let message): "the server refused the key (\(status)): \(message)"
        case .unexpectedStatus(let status, let message): "unexpected HTTP status \(status): \(message)"
        }
    }
}
