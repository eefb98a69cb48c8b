import PostgresClient

/// An error as the command line shows it: with the database's own message, which an operator
/// needs and an HTTP client must not see.
package struct CommandFailure: Error, CustomStringConvertible {
    package var description: String

    package init(description: String) { self.description = description }

    /// Runs `body`, turning database errors into their detailed form.
    package static func reporting<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as PostgresError {
            throw CommandFailure(description: error.debugDescription)
        }
    }
}
