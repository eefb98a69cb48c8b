/// Why the sender stopped sending. The queue keeps every event; nothing was dropped.
public enum DeliveryError: Error, Sendable, Hashable, CustomStringConvertible {
    /// 401 or 403: the key is wrong, revoked, or lacks the `ingest` scope. Retrying would not
    /// fix it, and would only load the server; ship a working key and call `flush()` again.
    case unauthorized(status: Int, message: String)
    /// A status the sender has no rule for (404, 405, ...): most likely the base URL does not
    /// point at a LocationGate server.
    case unexpectedStatus(Int, message: String)

    public var description: String {
        switch self {
        case .unauthorized(let status, let message): "the server refused the key (\(status)): \(message)"
        case .unexpectedStatus(let status, let message): "unexpected HTTP status \(status): \(message)"
        }
    }
}
