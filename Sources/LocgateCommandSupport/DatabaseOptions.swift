import ArgumentParser
import EventLog
import Foundation
import Logging
import PostgresClient

/// The database options every command shares.
package struct DatabaseOptions: ParsableArguments {
    package init() {}

    @Option(name: .customLong("database-url"), help: "libpq connection string or URI (default: $LOCGATE_DATABASE_URL)")
    package var databaseURL: String?

    @Option(name: .customLong("read-database-url"), help: "A streaming standby for reads that may lag: history, state as of, analytics, verify (default: $LOCGATE_READ_DATABASE_URL; unset reads the primary)")
    package var readDatabaseURL: String?

    @Option(name: .customLong("database-name"), help: "Use this database on the server the URL names")
    package var databaseName: String?

    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical")
    package var logLevel: String = "info"

    package func validate() throws {
        guard resolvedURL != nil else {
            throw ValidationError("no database: pass --database-url or set LOCGATE_DATABASE_URL")
        }
        guard Logger.Level(rawValue: logLevel) != nil else {
            throw ValidationError("unknown log level \(logLevel)")
        }
    }

    package var resolvedURL: String? {
        databaseURL ?? ProcessInfo.processInfo.environment["LOCGATE_DATABASE_URL"]
    }

    package var level: Logger.Level { Logger.Level(rawValue: logLevel) ?? .info }

    /// - Parameter statementTimeout: PostgreSQL's `statement_timeout` on every connection of
    ///   the pool (the server's: no statement a request starts may run longer); nil keeps the
    ///   server's setting (the CLI's long operations: migrate, archive, rebuild).
    package func makePool(size: Int, statementTimeout: Duration? = nil, logger: Logger) throws -> PostgresConnectionPool {
        guard let url = resolvedURL else { throw ValidationError("no database URL") }
        var configuration = PostgresConfiguration(connectionString: url)
        if let databaseName { configuration = configuration.with("dbname", databaseName) }
        if let statementTimeout { configuration = configuration.withStatementTimeout(statementTimeout) }
        return PostgresConnectionPool(configuration: configuration, size: size, logger: logger)
    }


    package var resolvedReadURL: String? {
        (readDatabaseURL ?? ProcessInfo.processInfo.environment["LOCGATE_READ_DATABASE_URL"]).flatMap { $0.isEmpty ? nil : $0 }
    }

    /// The standby's pool when a read URL is configured.
    package func makeReadPool(size: Int, statementTimeout: Duration? = nil, logger: Logger) -> PostgresConnectionPool? {
        guard let url = resolvedReadURL else { return nil }
        var configuration = PostgresConfiguration(connectionString: url)
        if let databaseName { configuration = configuration.with("dbname", databaseName) }
        if let statementTimeout { configuration = configuration.withStatementTimeout(statementTimeout) }
        return PostgresConnectionPool(configuration: configuration, size: size, logger: logger)
    }
}
