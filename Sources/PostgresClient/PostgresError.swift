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
    /// 42501: the role lacks the privilege.
    public var isInsufficientPrivilege: Bool { sqlState == "42501" }
}
