import ArgumentParser
import EventLog
import LocgateCommandSupport
import LocationGateSchema
import Logging

/// `locgate migrate`: applies the pending migrations of `Schema/`.
struct MigrateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate", abstract: "Apply the pending SQL migrations of Schema/.")

    @OptionGroup var database: DatabaseOptions

    func run() async throws {
        try await withPool(database, size: 1, label: "locgate.migrate") { pool, logger in
            let migrator = SchemaMigrator(pool: pool, migrations: try SchemaMigrations.load(), logger: logger)
            let applied = try await migrator.migrate()
            logger.info("schema is up to date", metadata: ["applied": "\(applied.count)", "known": "\(migrator.migrations.count)"])
        }
    }
}
