import ArgumentParser
import Logging

/// `locgate`: the LocationGate server and its tools.
@main
struct LocgateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "locgate",
        abstract: "LocationGate: Core Location authorization as an event-sourced backend.",
        version: LocgateVersion.text,
        subcommands: [
            ServeCommand.self, MigrateCommand.self, StatusCommand.self, AppsCommand.self, KeysCommand.self,
            FeaturesCommand.self, SimulateCommand.self, ReplayCommand.self, VerifyCommand.self, ArchiveCommand.self, EraseCommand.self, ExportCommand.self, RetentionCommand.self, AnalyticsCommand.self,
            ExperimentsCommand.self,
        ])
}
