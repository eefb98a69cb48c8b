import ArgumentParser
import Foundation
import LocgateCommandSupport
import LocationAuthorization
import LocationGateService
import LocationGateSimulation
import Logging

/// `locgate simulate`: drives a synthetic population through the real ingest path (the same
/// projection and log as `POST /v1/events`), with a progress bar on standard error.
struct SimulateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "simulate", abstract: "Append a realistic synthetic population of devices for an app.")

    @OptionGroup var database: DatabaseOptions
    @Option(help: "The app id") var app: String
    @Option(help: "Devices to simulate (two per user)") var devices = 1000
    @Option(help: "Random seed: the same seed gives the same population") var seed: UInt64 = 42
    @Option(help: "Events per append") var batch = 500
    @Option(help: "Appends in flight") var concurrency = 4
    @Option(help: "First device index (to add to an earlier population)") var firstDevice = 0
    @Flag(help: "Report as a real app does: statuses the delegate observes, never the button tapped (O2 infers the answers)")
    var observationsOnly = false
    @Option(help: ArgumentHelp(
        "Share of devices, 0 to 1, on iOS 18, iPadOS 18, watchOS 11 or visionOS 2 whose app uses service sessions (SPEC §11)",
        discussion: """
            Those apps hold CLServiceSessions (some declaring NSLocationRequireExplicitServiceSession, some \
            relying on implicit sessions), let Core Location prompt for them, run in the background with a \
            CLBackgroundActivitySession, are relaunched and re-take their sessions or not, and report \
            diagnostics from sessions, live updates and monitors. The other devices are the same whatever \
            the share. 0 (the default) gives the population of earlier releases, so that a benchmark \
            loads the same events into an earlier build; the demo and Labs/bench pass 0.3.
            """))
    var modernShare = 0.0
    @Option(help: ArgumentHelp(
        "The devices' platforms: ios, android or mixed",
        discussion: """
            ios (the default) is Apple's platforms alone, the population of earlier releases. android is \
            Android devices alone (SPEC §12): API levels 28 to 35 (and 37 with --button-share), app builds \
            with targetSdk 22 to 35 and their manifests, apps that report permission requests, results and \
            observations (never which button of a dialog was pressed): two refusals that block, approximate grants and the precise upgrade, one-time grants \
            that lapse, background through the API 29 dialog or the Settings page, Settings changes, \
            hibernation and location foreground services. mixed makes about \
            \(Int(PopulationSimulator.mixedAndroidShare * 100))% of the devices Android; the others are those \
            of ios for the same seed, and --modern-share applies to them.
            """))
    var platform = SimulatedPlatform.ios.rawValue
    @Option(help: ArgumentHelp(
        "Share of the Android devices, 0 to 1, on Android 17 (API 37) whose app uses the location button (SPEC §12)",
        discussion: """
            Those apps declare USE_LOCATION_BUTTON (about a third also mark FINE onlyForLocationButton) and \
            report the button's sessions (opened, closed, failed) and results: consent dialogs answered \
            Allow, direct grants after two consents, "Don't allow" twice to a precise block, one-time grants \
            that lapse when the app leaves the foreground, and the manifest flag's refusals and \
            approximate-only dialog. The other Android devices are the same whatever the share. 0 (the \
            default) gives the Android devices of earlier releases, so that a benchmark loads the same \
            events into an earlier build; PopulationSimulator's own default, which the tests use, is \
            \(Int(PopulationSimulator.defaultButtonShare * 100))%. Needs --platform android or mixed.
            """))
    var buttonShare = 0.0
    @Flag(help: "No progress bar") var quiet = false

    func validate() throws {
        guard UUID(uuidString: app) != nil else { throw ValidationError("--app must be an app id (a UUID)") }
        guard devices > 0, (1...IngestCapability.maxBatchEvents).contains(batch), concurrency > 0 else {
            throw ValidationError("--devices and --concurrency must be positive, --batch 1 to \(IngestCapability.maxBatchEvents)")
        }
        guard (0...1).contains(modernShare) else { throw ValidationError("--modern-share must be from 0 to 1") }
        guard (0...1).contains(buttonShare) else { throw ValidationError("--button-share must be from 0 to 1") }
        guard SimulatedPlatform(rawValue: platform) != nil else {
            throw ValidationError("--platform must be ios, android or mixed")
        }
    }

    func run() async throws {
        guard let appID = UUID(uuidString: app), let platforms = SimulatedPlatform(rawValue: platform) else { return }
        let simulator = PopulationSimulator(
            seed: seed, observationsOnly: observationsOnly, modernShare: modernShare, platform: platforms,
            buttonShare: buttonShare)
        // The bar redraws one line: only on a terminal; logs and CI get the final report alone.
        let progress = ProgressBar(total: devices, enabled: !quiet && isatty(STDERR_FILENO) == 1)
        let clock = ContinuousClock()
        let started = clock.now
        let totals = try await withService(database, poolSize: concurrency + 1) { service in
            // The log's tables take the app on trust (the append path's keys belong to one):
            // an app id given here is checked once, before anything is appended.
            try await requireApp(appID, in: service, "nothing was appended")
            return try await Self.drive(service: service, appID: appID, simulator: simulator, devices: firstDevice..<(firstDevice + devices),
                                 batch: batch, concurrency: concurrency, progress: progress)
        }
        progress.finish()
        let elapsed = clock.now - started
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        try printJSON(SimulationReport(
            devices: devices, events: totals, seconds: (seconds * 100).rounded() / 100,
            eventsPerSecond: seconds > 0 ? Int(Double(totals) / seconds) : 0))
    }

    struct SimulationReport: Encodable {
        var devices: Int
        var events: Int
        var seconds: Double
        var eventsPerSecond: Int
    }

    static func drive(
        service: GateService, appID: UUID, simulator: PopulationSimulator, devices: Range<Int>, batch: Int,
        concurrency: Int, progress: ProgressBar
    ) async throws -> Int {
        // Batches of whole devices, so that every device's events arrive in order.
        var batches: [([EventSubmission], Int)] = []
        var current: [EventSubmission] = []
        var currentDevices = 0
        for index in devices {
            let events = simulator.device(index)
            if current.count + events.count > batch, !current.isEmpty {
                batches.append((current, currentDevices))
                current = []
                currentDevices = 0
            }
            current += events
            currentDevices += 1
        }
        if !current.isEmpty { batches.append((current, currentDevices)) }
        var total = 0
        try await withThrowingTaskGroup(of: (Int, Int).self) { group in
            var next = 0
            func submit() {
                guard next < batches.count else { return }
                let (events, deviceCount) = batches[next]
                next += 1
                group.addTask {
                    let results = try await service.events.ingest(appID: appID, submissions: events)
                    return (results.count, deviceCount)
                }
            }
            for _ in 0..<concurrency { submit() }
            while let (count, deviceCount) = try await group.next() {
                total += count
                progress.advance(by: deviceCount, events: total)
                submit()
            }
        }
        return total
    }
}

/// A one-line progress bar on standard error.
final class ProgressBar: @unchecked Sendable {
    private let total: Int
    private let enabled: Bool
    private var done = 0
    private let started = Date()

    init(total: Int, enabled: Bool) {
        self.total = max(1, total)
        self.enabled = enabled
    }

    func advance(by count: Int, events: Int) {
        done += count
        guard enabled else { return }
        let fraction = min(1, Double(done) / Double(total))
        let width = 30
        let filled = Int(fraction * Double(width))
        let rate = Double(events) / max(0.001, Date().timeIntervalSince(started))
        let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
        FileHandle.standardError.write(Data("\r[\(bar)] \(Int(fraction * 100))% \(done)/\(total) devices, \(events) events, \(Int(rate)) events/s".utf8))
    }

    func finish() {
        if enabled { FileHandle.standardError.write(Data("\n".utf8)) }
    }
}
