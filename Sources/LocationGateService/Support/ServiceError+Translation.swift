import EventLog
import LocationAuthorization
import PostgresClient

extension ServiceError {
    /// Any error of a service call as a `ServiceError`: unreachable, restarting, failing over or
    /// out of connections is 503 `databaseUnavailable`; no free connection in time is 503
    /// `overloaded`; a statement cut off by `statement_timeout` (57014) is 503 `overloaded`;
    /// anything else is a defect (500), logged by the HTTP layer. That includes a value the
    /// database refused (class 22 or 23): every value is validated before it reaches the
    /// database, so such a refusal is the server's fault, and a client must keep and resend
    /// its events rather than drop them as it drops a 422.
    public static func from(_ error: any Error) -> ServiceError {
        if let service = error as? ServiceError { return service }
        if case .database(let underlying)? = error as? EventLogError { return from(underlying) }
        if let postgres = error as? PostgresError {
            // The cause is for the command line and the log (`detailedDescription`); a client
            // sees the code and the message.
            if postgres.code == .poolExhausted {
                return ServiceError(.overloaded, "the server is busy: no database connection became free in time", cause: cause(of: error))
            }
            if postgres.isUnavailable {
                return ServiceError(.databaseUnavailable, "the database is unavailable", cause: cause(of: error))
            }
            if postgres.isStatementTimeout {
                return ServiceError(.overloaded, "the database did not finish the request in time", cause: cause(of: error))
            }
        }
        return ServiceError(.internalError, "the request could not be completed", cause: cause(of: error))
    }

    /// An append's refusal as the client sees it: a stream at another version (409), an id
    /// stored with other content (409), an event the rules refuse (422), each naming the
    /// event's index; the database's errors as `from` maps them.
    static func appending(_ error: EventLogError) -> ServiceError {
        switch error {
        case .versionConflict(let index, let stream, let expected, let actual):
            return ServiceError(
                .versionConflict,
                "stream \(stream.userID)/\(stream.deviceID) is at version \(actual), not the expected \(expected)",
                index: index)
        case .idConflict(let index, let id, let field):
            return ServiceError(
                .idConflict,
                "id \(id.lowercasedText) is stored already with other content (its \(field) differs): an id names one event, and a retry sends it unchanged",
                index: index)
        case .rejected(let index, let reason):
            if let rejection = reason as? AuthorizationRejection {
                return ServiceError(rejection.isValidation ? .validationFailed : .ruleViolation, rejection.message, index: index)
            }
            return ServiceError(.ruleViolation, "\(reason)", index: index)
        case .database(let underlying):
            return from(underlying)
        }
    }

    /// What went wrong underneath an `internalError`, for the command line and the log: the
    /// database's message, SQLSTATE and constraint, without its DETAIL (which may quote a row's
    /// values, such as a user id).
    static func cause(of error: any Error) -> String {
        guard let postgres = error as? PostgresError else { return String(describing: error) }
        var text = postgres.message
        if let sqlState = postgres.sqlState { text += " [SQLSTATE \(sqlState)]" }
        if let constraint = postgres.constraint { text += " constraint=\(constraint)" }
        return text
    }
}

/// A capability whose calls reach the database: `database { }` runs one, translating its
/// errors (`ServiceError.from`).
protocol DatabaseCalls {}

extension DatabaseCalls {
    /// Runs a database operation, translating its errors.
    func database<T>(_ body: () async throws -> T) async throws(ServiceError) -> T {
        do {
            return try await body()
        } catch {
            throw ServiceError.from(error)
        }
    }
}
