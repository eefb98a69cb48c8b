/// An error from PostgreSQL or libpq. `description` is safe to show to a client; the details
/// (server message, SQL state, constraint) are in `debugDescription` and the fields.
public struct PostgresError: Error, Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    public enum Code: String, Sendable, Hashable {
        /// The connection could not be made or was lost.
        case connectionFailed
        /// The server rejected a statement; `sqlState` says why.
        case server
        /// A value in a result did not have the expected type.
        case decoding
        /// The pool or client was shut down.
        case shutDown
        /// No connection became free in time, or the pool's waiting line was full: the caller
        /// should shed the request (503) rather than queue it.
        case poolExhausted
        /// A parameter cannot be sent as given (a NUL byte in text, which libpq would cut
        /// short): a defect of the caller, refused instead of stored truncated.
        case invalidParameter
    }

    public var code: Code
    /// The SQLSTATE, such as `23505` for a unique violation.
    public var sqlState: String?
    public var message: String
    public var detail: String?
    public var constraint: String?

    public init(_ code: Code, sqlState: String? = nil, message: String, detail: String? = nil, constraint: String? = nil) {
        self.code = code
        self.sqlState = sqlState
        self.message = message
        self.detail = detail
        self.constraint = constraint
    }

    public var description: String {
        switch code {
        case .connectionFailed: "the database connection failed"
        case .server: "the database refused the statement (SQLSTATE \(sqlState ?? "unknown"))"
        case .decoding: "a database value had an unexpected type"
        case .shutDown: "the database client is shut down"
        case .poolExhausted: "no database connection is free"
        case .invalidParameter: "a database parameter was refused"
        }
    }

    public var debugDescription: String {
        var text = "PostgresError.\(code.rawValue)"
        if let sqlState { text += " [\(sqlState)]" }
        text += ": \(message)"
        if let detail { text += " (\(detail))" }
        if let constraint { text += " constraint=\(constraint)" }
        return text
    }

    /// 23505: a unique constraint refused a row.
    public var isUniqueViolation: Bool { sqlState == "23505" }
    /// 40001 / 40P01: retrying the transaction may succeed.
    public var isSerializationFailure: Bool { sqlState == "40001" || sqlState == "40P01" }
    /// The database is unreachable, restarting, failing over or out of connections: nothing the
    /// request did wrong, and retrying later may succeed (503, not 500). Connection exceptions
    /// (08), terminated sessions (57P01 admin shutdown, 57P02 crash shutdown, 57P03 cannot
    /// connect now), insufficient resources (53: too many clients, out of memory, disk full),
    /// a read-only transaction (25006: the node is a standby after a failover) and
    /// serialization failures.
    public var isUnavailable: Bool {
        switch code {
        case .connectionFailed, .shutDown, .poolExhausted: return true
        case .decoding, .invalidParameter: return false
        case .server:
            guard let sqlState else { return false }
            return sqlState.hasPrefix("08") || sqlState.hasPrefix("53") || sqlState.hasPrefix("57P")
                || sqlState == "25006" || isSerializationFailure
        }
    }

    /// The session is gone (terminated, crashed, or the socket failed): the connection must
    /// not be reused.
    public var endsSession: Bool {
        code == .connectionFailed || sqlState.map { $0.hasPrefix("08") || $0.hasPrefix("57P") } ?? false
    }

    /// A fault of the data one request sent rather than of the database: data exceptions (22)
    /// and integrity violations (23) other than the unique keys the log answers itself. Such an
    /// error fails that request alone.
    public var isDataFault: Bool {
        code == .invalidParameter || (code == .server && (sqlState.map { $0.hasPrefix("22") || $0.hasPrefix("23") } ?? false))
    }

    /// 57014: the statement was cancelled, by `statement_timeout` or a cancel request.
    public var isStatementTimeout: Bool { sqlState == "57014" }

    /// 42501: the role lacks the privilege.
    public var isInsufficientPrivilege: Bool { sqlState == "42501" }
}
