import ArgumentParser
import Foundation
import LocgateCommandSupport
import LocationAuthorization
import LocationGateService

/// `locgate retention`: an app's retention on demand (SPEC §13, docs/operations.md).
struct RetentionCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "retention",
        abstract: "Run an app's retention now, or show what a run would erase.",
        subcommands: [RetentionRunCommand.self])
}

/// `locgate retention run --app ID [--dry-run]`: runs the app's retention now, as the servers'
/// schedule does (the run is recorded as the app's `lastRun` when it erases events), and prints
/// `{"cut", "events", "devices", "unfinished"}`; with `--dry-run`, prints what a run would erase,
/// `{"cut", "events", "devices"}`, erasing nothing and leaving `lastRun` as it was.
struct RetentionRunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run an app's retention now (or, with --dry-run, print what it would erase).")

    @OptionGroup var database: DatabaseOptions
    @Option(help: "The app id") var app: String
    @Flag(help: "Print what a run would erase, erasing nothing") var dryRun = false

    /// How long the command's run may take; a run stopped there says `unfinished`, and the next
    /// (this command again, or the servers' schedule) goes on.
    static let budget: Duration = .seconds(3600)

    /// What a run did: its cut, the events it erased and the devices they belonged to.
    struct Outcome: Encodable {
        var cut: String
        var events: Int64
        var devices: Int64
        var unfinished: Bool
    }

    func validate() throws {
        guard UUID(uuidString: app) != nil else { throw ValidationError("--app: not an app id") }
    }

    func run() async throws {
        guard let appID = UUID(uuidString: app) else { return }
        let dryRun = self.dryRun
        let noRetention = CommandFailure(
            description: "the app keeps every event (no retention is set): set one with PUT /v1/apps/\(app.lowercased())/retention")
        if dryRun {
            let preview = try await withService(database) { service in
                try await requireApp(appID, in: service, "nothing was erased")
                return try await service.retention.previewRetention(appID: appID)
            }
            guard let preview else { throw noRetention }
            try printJSON(preview)
            return
        }
        let outcome = try await withService(database) { (service: GateService) -> Outcome? in
            try await requireApp(appID, in: service, "nothing was erased")
            guard let days = try await service.retention.retentionDays(appID: appID) else { return nil }
            let now = Date()
            let report = try await service.retention.runRetention(appID: appID, now: now, budget: Self.budget)
            if report.skipped {
                throw CommandFailure(description: "another retention run, or an archive, holds the lock: nothing was erased; try again")
            }
            // The run's own record (its devices counted once each), when it erased anything.
            var lastRun: Retention.LastRun?
            if report.events > 0 { lastRun = try await service.retention.lastRetentionRun(appID: appID) }
            return Outcome(
                cut: lastRun?.cut ?? RFC3339.string(from: now.addingTimeInterval(-Double(days) * 86_400)),
                events: Int64(report.events), devices: lastRun?.devices ?? 0, unfinished: report.unfinished)
        }
        guard let outcome else { throw noRetention }
        try printJSON(outcome)
    }
}
