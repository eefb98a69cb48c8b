/// An error of the gating service, with the SPEC §5 code the HTTP layer maps to a status once.
public struct ServiceError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Code: String, Sendable, Hashable {
        case malformedJSON
        case invalidRequest
        case unauthorized
        case forbidden
        case notFound
        case versionConflict
        case tooLarge
        case validationFailed
        case ruleViolation
        case rateLimited
        case databaseUnavailable
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
}

extension ServiceError {
    /// Any error of a service call as a `ServiceError`: unreachable databases are 503, anything
    /// unexpected is 500 with its details left to the log.
    public static func from(_ error: any Error) -> ServiceError {
        GateService.translate(database: error)
    }
}
