import ArgumentParser
import EventLog
import Foundation
import LocationGateSchema
import Logging
import PostgresClient

/// `locgate status`: the health of the log, as JSON on standard output.
struct StatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status", abstract: "Report the event log's health: migrations, events, streams.")

    @OptionGroup var database: DatabaseOptions

    func run() async throws {
        try await CommandFailure.reporting { try await runCommand() }
    }

    private func runCommand() async throws {
        LocgateCommand.bootstrapLogging(level: database.level)
        let logger = Logger(label: "locgate.status")
        let pool = try database.makePool(size: 1, logger: logger)
        let migrator = SchemaMigrator(pool: pool, migrations: try SchemaMigrations.load(), logger: logger)
        let pending = try await migrator.pending()
        var report = LogHealthReport(pendingMigrations: pending.map(\.name))
        if pending.isEmpty {
            let health = try await EventLog(pool: pool, logger: logger).health()
            report.events = health.events
            report.streams = health.streams
            report.unreadableEvents = health.unreadableEvents
        }
        await pool.close()
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        FileHandle.standardOutput.write(try encoder.encode(report) + Data("\n".utf8))
        if !pending.isEmpty { throw ExitCode(2) }
    }
}

struct LogHealthReport: Encodable {
    var pendingMigrations: [String]
    var events: Int64?
    var streams: Int64?
    var unreadableEvents: Int64?
}
