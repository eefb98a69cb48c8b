/// An error of the gating service, with the SPEC §5 code the HTTP layer maps to a status once.
public struct ServiceError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Code: String, Sendable, Hashable {
        case malformedJSON
        case invalidRequest
        case unauthorized
        case forbidden
        case notFound
        /// A known path with another method (405; routing).
        case methodNotAllowed
        case versionConflict
        /// An event whose id is stored already with other content (409; SPEC §14).
        case idConflict
        /// Revoking the app's last live admin key (409; SPEC §14 "Guard rails"): create another first.
        case lastAdminKey
        /// A key that a feature and an experiment of the app cannot share (409; SPEC §16): an
        /// experiment PUT with a feature's key, or a feature PUT with an experiment's.
        case keyInUse
        /// A running experiment's PUT changed its variants' keys or order, its prompt or its
        /// control (409; SPEC §16).
        case experimentRunning
        /// A stopped experiment changed or stopped again (409; SPEC §16).
        case experimentStopped
        case tooLarge
        case validationFailed
        case ruleViolation
        case rateLimited
        case databaseUnavailable
        /// The server's bounded queues are full (503 with Retry-After): shed, not queued.
        case overloaded
        /// Not the client's fault (500); details are logged, not sent.
        case internalError
    }

    public var code: Code
    public var message: String
    /// The 0-based position of the offending event in a batch.
    public var index: Int?
    /// What went wrong underneath an `internalError` (the database's own message), for logs and
    /// the command line; never sent to an HTTP client, and not part of the error's identity.
    public var cause: String?

    public init(_ code: Code, _ message: String, index: Int? = nil, cause: String? = nil) {
        self.code = code
        self.message = message
        self.index = index
        self.cause = cause
    }

    public var description: String { "\(code.rawValue): \(message)" }

    /// The code, the message and, when known, the cause: what an operator reads (SPEC §14: a
    /// command that fails never prints only `internalError`).
    public var detailedDescription: String {
        guard let cause, !cause.isEmpty else { return description }
        return "\(description) (\(cause))"
    }

    public static func == (lhs: ServiceError, rhs: ServiceError) -> Bool {
        lhs.code == rhs.code && lhs.message == rhs.message && lhs.index == rhs.index
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(code)
        hasher.combine(message)
        hasher.combine(index)
    }

    /// 503s: the client should retry after a pause; nothing of the request was its fault.
    public var isRetryable: Bool { code == .databaseUnavailable || code == .overloaded }
}
