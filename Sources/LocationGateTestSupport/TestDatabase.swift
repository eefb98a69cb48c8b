import EventLog
import Foundation
import LocationGateSchema
import Logging
import PostgresClient

/// A fresh, migrated database for one test process, on the server `LOCGATE_DATABASE_URL`
/// names (`Deploy/test` starts a throwaway cluster when it is unset). Tests share it and keep
/// apart by using an app of their own.
public enum TestDatabase {
    /// Holds the one creation task, so that concurrent first callers wait for the same database.
    private actor Once {
        var task: Task<PostgresConfiguration, any Error>?

        func get() async throws -> PostgresConfiguration {
            if let task { return try await task.value }
            let task = Task { try await TestDatabase.create(prefix: "locgate_test") }
            self.task = task
            return try await task.value
        }
    }

    private static let once = Once()

    /// The configuration of this process's test database.
    public static func configuration() async throws -> PostgresConfiguration {
        try await once.get()
    }

    /// The server's own configuration, as `LOCGATE_DATABASE_URL` gives it.
    public static func serverConfiguration() throws -> PostgresConfiguration {
        guard let url = ProcessInfo.processInfo.environment["LOCGATE_DATABASE_URL"], !url.isEmpty else {
            throw TestDatabaseError.noServer
        }
        return PostgresConfiguration(connectionString: url, applicationName: "locgate-tests")
    }

    /// Creates an empty database (no migrations) with a unique name, and returns its configuration.
    public static func createEmpty(prefix: String) async throws -> PostgresConfiguration {
        let server = try serverConfiguration()
        let name = "\(prefix)_\(getpid())_\(UUID().uuidString.prefix(8).lowercased())"
        let pool = PostgresConnectionPool(configuration: server, size: 1, logger: logger)
        do {
            // Identifiers cannot be bound; the name is made here from digits and hex only.
            try await pool.withConnection { connection in try connection.execute("CREATE DATABASE \(name)") }
            await pool.close()
        } catch {
            await pool.close()
            throw error
        }
        return server.with("dbname", name)
    }

    /// Creates a database and applies every migration.
    public static func create(prefix: String) async throws -> PostgresConfiguration {
        let configuration = try await createEmpty(prefix: prefix)
        let pool = PostgresConnectionPool(configuration: configuration, size: 1, logger: logger)
        do {
            try await SchemaMigrator(pool: pool, migrations: try SchemaMigrations.load(), logger: logger).migrate()
            await pool.close()
        } catch {
            await pool.close()
            throw error
        }
        return configuration
    }

    /// A pool on the shared test database. Its callers wait for a connection up to 60 s, not
    /// the production 2 s: tests that fire hundreds of requests at a few connections check what
    /// the requests do, not how fast a loaded test machine serves them (the overload tests build
    /// pools with short waits of their own).
    public static func pool(size: Int = 4) async throws -> PostgresConnectionPool {
        PostgresConnectionPool(configuration: try await configuration(), size: size, waitTimeout: .seconds(60), logger: logger)
    }

    /// A pool on a migrated database of its own, for tests of whole-database operations: a
    /// rebuild holds the analytics rollup's lock (other tests' analytics would wait for it), an
    /// archive drops partitions of every app.
    public static func privatePool(prefix: String, size: Int = 4) async throws -> PostgresConnectionPool {
        PostgresConnectionPool(configuration: try await create(prefix: prefix), size: size, waitTimeout: .seconds(60), logger: logger)
    }

    /// Registers an app so that streams may reference it, and returns its id.
    public static func makeApp(_ pool: PostgresConnectionPool, name: String = "test") async throws -> UUID {
        let id = UUID()
        try await pool.query("INSERT INTO apps (id, name) VALUES (\(id), \(name))")
        return id
    }

    /// Tests log nothing unless asked: swift-log's advice is never to bootstrap in tests.
    public static let logger = Logger(label: "locgate.tests", factory: { _ in SwiftLogNoOpLogHandler() })
}

public enum TestDatabaseError: Error, CustomStringConvertible {
    case noServer

    public var description: String {
        "LOCGATE_DATABASE_URL is not set: run the tests with Deploy/test, which starts a throwaway PostgreSQL"
    }
}
