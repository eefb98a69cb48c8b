import ArgumentParser
import Foundation
import LocgateCommandSupport
import LocationGateService
import Logging

/// `locgate replay [--diff]`: rebuild every projection from the log, or show first what a
/// rebuild with this build's rules would change.
struct ReplayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay", abstract: "Rebuild the projections from the log (or --diff: show what would change).")

    @OptionGroup var database: DatabaseOptions
    @Option(help: "Only this app (an app id)") var app: String?
    @Flag(help: "Change nothing: count the devices whose decisions would change, per feature and reason") var diff = false
    @Option(help: "Devices to show as a sample with --diff") var sample = 10

    func validate() throws {
        if let app, UUID(uuidString: app) == nil { throw ValidationError("--app must be an app id (a UUID)") }
    }

    func run() async throws {
        let progress = EventProgress()
        let clock = ContinuousClock()
        let started = clock.now
        let appID = app.flatMap(UUID.init(uuidString:))
        try await withService(database, poolSize: 2) { service in
            if let appID { try await requireApp(appID, in: service, "nothing was replayed") }
            let replay = service.audit.replay(appID: appID, logger: Logger(label: "locgate.replay"))
            if diff {
                let report = try await replay.diff(sampleSize: sample, progress: progress.report)
                progress.finish()
                print("devices: \(report.devices), whose decisions would change: \(report.devicesChanged)")
                for (change, count) in report.changes.sorted(by: { $0.value > $1.value }) {
                    print("  \(count)\t\(change)")
                }
                if !report.samples.isEmpty { print("sample:") }
                for sample in report.samples { print("  \(sample)") }
                return
            }
            let projection = try await replay.rebuild(progress: progress.report)
            progress.finish()
            let seconds = (clock.now - started).seconds
            try printJSON(ReplayReport(
                events: projection.events, devices: projection.devices.count, rejected: projection.rejected.count,
                seconds: (seconds * 100).rounded() / 100, eventsPerSecond: Int(Double(projection.events) / max(seconds, 0.001))))
        }
    }

    struct ReplayReport: Encodable {
        var events: Int
        var devices: Int
        var rejected: Int
        var seconds: Double
        var eventsPerSecond: Int
    }
}

/// `locgate verify`: recompute every device from the log and compare with the projections.
struct VerifyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify", abstract: "Compare the stored projections with the log; exit 1 on any difference.")

    @OptionGroup var database: DatabaseOptions
    @Option(help: "Only this app (an app id)") var app: String?

    func validate() throws {
        if let app, UUID(uuidString: app) == nil { throw ValidationError("--app must be an app id (a UUID)") }
    }

    func run() async throws {
        let progress = EventProgress()
        let appID = app.flatMap(UUID.init(uuidString:))
        let differences = try await withService(database) { service in
            if let appID { try await requireApp(appID, in: service, "nothing was verified") }
            return try await service.audit.replay(appID: appID, logger: Logger(label: "locgate.verify"))
                .verify(progress: progress.report)
        }
        progress.finish()
        for difference in differences { print(difference) }
        if differences.isEmpty {
            print("verified: the projections match the log")
        } else {
            print("\(differences.count) differences")
            throw ExitCode(1)
        }
    }
}

/// A counter of events read, on standard error when it is a terminal.
final class EventProgress: @unchecked Sendable {
    private let enabled = isatty(STDERR_FILENO) == 1
    private let started = Date()

    var report: @Sendable (Int) -> Void {
        { [self] events in
            guard enabled else { return }
            let rate = Double(events) / max(0.001, Date().timeIntervalSince(started))
            FileHandle.standardError.write(Data("\r\(events) events read, \(Int(rate)) events/s".utf8))
        }
    }

    func finish() {
        if enabled { FileHandle.standardError.write(Data("\n".utf8)) }
    }
}

