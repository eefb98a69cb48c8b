import ArgumentParser
import Foundation
import LocgateCommandSupport
import LocationAuthorization
import LocationGateService

/// `locgate erase --app ID --user U [--device D]`: erases a person of an app, or one device of
/// theirs (SPEC §13, docs/operations.md): performs the erasure here, then waits, up to `--wait`
/// seconds, for every running server to drop the person (or the device) from its caches.
/// Prints the erasure's record (no ids but its own).
struct EraseCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "erase",
        abstract: "Erase one person of an app, or one device of theirs: events, states, history, caches (SPEC §13).")

    @OptionGroup var database: DatabaseOptions
    @Option(help: "The app id") var app: String
    @Option(help: "The user id, as the app reports it") var user: String
    @Option(help: "One device of the person, as the app reports it: erase only it; the person's other devices stay")
    var device: String?
    @Option(help: "Seconds to wait for every running server to acknowledge") var wait = 10

    func validate() throws {
        guard UUID(uuidString: app) != nil else { throw ValidationError("--app: not an app id") }
        guard EventSubmission.isValidIdentifier(user) else {
            throw ValidationError("--user: \(EventSubmission.identifierRule)")
        }
        if let device, !EventSubmission.isValidIdentifier(device) {
            throw ValidationError("--device: \(EventSubmission.identifierRule)")
        }
    }

    func run() async throws {
        guard let appID = UUID(uuidString: app) else { return }
        let record = try await withService(database) { service in
            try await requireApp(appID, in: service, "nothing was erased")
            let requested: ErasureRecord
            if let device {
                requested = try await service.erasure.requestDeviceErasure(appID: appID, userID: user, deviceID: device, actor: .cli)
            } else {
                requested = try await service.erasure.requestErasure(appID: appID, userID: user, actor: .cli)
            }
            // Phase 1 here (a server's worker may get there first: then there is nothing left).
            while try await service.erasure.performNextErasure() {}
            let deadline = ContinuousClock.now + .seconds(wait)
            while ContinuousClock.now < deadline {
                try await service.erasure.completeErasures()
                if let record = try await service.erasure.erasure(appID: appID, id: requested.id), record.status == "done" { return record }
                try await Task.sleep(for: .milliseconds(100))
            }
            return try await service.erasure.erasure(appID: appID, id: requested.id) ?? requested
        }
        try printJSON(record)
    }
}
