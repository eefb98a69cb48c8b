import ArgumentParser
import EventLog
import LocationGateSchema
import Logging
import PostgresClient

/// `locgate migrate`: applies the pending migrations of `Schema/`.
struct MigrateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate", abstract: "Apply the pending SQL migrations of Schema/.")

    @OptionGroup var database: DatabaseOptions

    func run() async throws {
        try await CommandFailure.reporting { try await runCommand() }
    }

    private func runCommand() async throws {
        LocgateCommand.bootstrapLogging(level: database.level)
        let logger = Logger(label: "locgate.migrate")
        let pool = try database.makePool(size: 1, logger: logger)
        let migrator = SchemaMigrator(pool: pool, migrations: try SchemaMigrations.load(), logger: logger)
        do {
            let applied = try await migrator.migrate()
            logger.info("schema is up to date", metadata: ["applied": "\(applied.count)", "known": "\(migrator.migrations.count)"])
            await pool.close()
        } catch {
            await pool.close()
            throw error
        }
    }
}
