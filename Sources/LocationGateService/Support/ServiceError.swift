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

    public init(_ code: Code, _ message: String, index: Int? = nil) {
        self.code = code
        self.message = message
        self.index = index
    }

    public var description: String { "\(code.rawValue): \(message)" }

    /// 503s: the client should retry after a pause; nothing of the request was its fault.
    public var isRetryable: Bool { code == .databaseUnavailable || code == .overloaded }
}

extension ServiceError {
    /// Any error of a service call as a `ServiceError`: unreachable databases are 503, anything
    /// unexpected is 500 with its details left to the log.
    public static func from(_ error: any Error) -> ServiceError {
        GateService.translate(database: error)
    }
}
