import ArgumentParser
import EventLog
import LocgateCommandSupport
import LocationGateSchema
import Logging

/// `locgate status`: the health of the log, as JSON on standard output.
struct StatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status", abstract: "Report the event log's health: migrations, events, streams.")

    @OptionGroup var database: DatabaseOptions

    func run() async throws {
        let report = try await withPool(database, size: 1, label: "locgate.status") { pool, logger in
            let migrator = SchemaMigrator(pool: pool, migrations: try SchemaMigrations.load(), logger: logger)
            var report = LogHealthReport(pendingMigrations: try await migrator.pending().map(\.name))
            if report.pendingMigrations.isEmpty {
                let health = try await EventLog(pool: pool, logger: logger).health()
                report.events = health.events
                report.streams = health.streams
                report.unreadableEvents = health.unreadableEvents
            }
            return report
        }
        try printJSON(report)
        if !report.pendingMigrations.isEmpty { throw ExitCode(2) }
    }
}

struct LogHealthReport: Encodable {
    var pendingMigrations: [String]
    var events: Int64?
    var streams: Int64?
    var unreadableEvents: Int64?
}
