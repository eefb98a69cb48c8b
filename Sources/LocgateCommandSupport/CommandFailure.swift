import LocationGateService
import PostgresClient

/// An error as the command line shows it: with the database's own message, which an operator
/// needs and an HTTP client must not see.
package struct CommandFailure: Error, CustomStringConvertible {
    package var description: String

    package init(description: String) { self.description = description }

    /// Runs `body`, turning database errors into their detailed form, and a service's error
    /// into its code and message with, under an `internalError`, what went wrong underneath
    /// (SPEC §14 "Guard rails": a command that fails never prints only `internalError`).
    package static func reporting<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as PostgresError {
            throw CommandFailure(description: error.debugDescription)
        } catch let error as ServiceError {
            throw CommandFailure(description: error.detailedDescription)
        }
    }
}
