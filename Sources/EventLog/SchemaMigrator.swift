import Foundation
import LocationGateSchema
import Logging
import PostgresClient

/// Applies the numbered migrations of `Schema/`, each in its own transaction, and records them
/// in `locgate_migrations`. Concurrent migrators take turns on an advisory lock, so running
/// `locgate migrate` twice at once is safe; running it again is a no-op.
public struct SchemaMigrator: Sendable {
    public let pool: PostgresConnectionPool
    public let migrations: [SchemaMigration]
    let logger: Logger

    public init(pool: PostgresConnectionPool, migrations: [SchemaMigration], logger: Logger) {
        self.pool = pool
        self.migrations = migrations
        self.logger = logger
    }

    /// The versions already applied.
    public func appliedVersions() async throws -> Set<Int> {
        try await pool.withConnection { connection in try Self.appliedVersions(connection) }
    }

    /// The migrations not yet applied, in order.
    public func pending() async throws -> [SchemaMigration] {
        let applied = try await appliedVersions()
        return migrations.filter { !applied.contains($0.version) }
    }

    /// Applies every pending migration and returns those it applied. A migration whose text
    /// changed after it was applied is an error: migrations are never edited.
    @discardableResult
    public func migrate() async throws -> [SchemaMigration] {
        let migrations = self.migrations
        let logger = self.logger
        return try await pool.withConnection { connection in
            // One migrator at a time per database, from before the bookkeeping table exists
            // (two concurrent CREATE TABLE IF NOT EXISTS can still collide).
            try connection.query("SELECT pg_advisory_lock(\(Self.lockKey))")
            defer { _ = try? connection.query("SELECT pg_advisory_unlock(\(Self.lockKey))") }
            try connection.execute(
                """
                CREATE TABLE IF NOT EXISTS locgate_migrations (
                    version integer PRIMARY KEY,
                    name text NOT NULL,
                    checksum text NOT NULL,
                    applied_at timestamptz NOT NULL DEFAULT now())
                """)
            var applied: [SchemaMigration] = []
            for migration in migrations {
                let didApply = try connection.transaction { connection -> Bool in
                    let stored = try connection.query(
                        "SELECT checksum FROM locgate_migrations WHERE version = \(migration.version)")
                    if let row = stored.first {
                        let checksum: String = try row.decode(0)
                        guard checksum == migration.checksum else {
                            throw MigrationError.changedAfterApply(migration.name)
                        }
                        return false
                    }
                    try connection.execute(migration.sql)
                    try connection.query(
                        """
                        INSERT INTO locgate_migrations (version, name, checksum)
                        VALUES (\(migration.version), \(migration.name), \(migration.checksum))
                        """)
                    return true
                }
                if didApply {
                    logger.info("migration applied", metadata: ["migration": "\(migration.name)"])
                    applied.append(migration)
                }
            }
            return applied
        }
    }

    /// "locgate" as a number: the advisory lock migrators take turns on.
    static let lockKey = Int64(0x6c6f_6367_6174_65)

    static func appliedVersions(_ connection: PostgresConnection) throws -> Set<Int> {
        let exists = try connection.query("SELECT to_regclass('locgate_migrations') IS NOT NULL")
        guard try exists.first?.decode(0, as: Bool.self) == true else { return [] }
        let rows = try connection.query("SELECT version FROM locgate_migrations")
        return Set(try rows.map { try $0.decode(0, as: Int.self) })
    }
}

/// Why migrating failed.
public enum MigrationError: Error, CustomStringConvertible {
    case changedAfterApply(String)
    case pending([String])

    public var description: String {
        switch self {
        case .changedAfterApply(let name):
            "migration \(name) was edited after it was applied; add a new migration instead"
        case .pending(let names):
            "migrations are pending (\(names.joined(separator: ", "))): run `locgate migrate` first"
        }
    }
}

extension SchemaMigration {
    /// FNV-1a of the SQL text: enough to notice an edited migration.
    var checksum: String {
        String(FNV1a.hash(sql.utf8), radix: 16)
    }
}
