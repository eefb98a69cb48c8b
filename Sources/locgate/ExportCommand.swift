import ArgumentParser
import Foundation
import LocgateCommandSupport
import LocationAuthorization
import LocationGateService

/// `locgate export --app ID --user U [--output FILE]`: everything LocationGate holds of one
/// person of an app, as `GET /v1/users/{u}/export` answers it (SPEC §13, GDPR Art. 15 and 20),
/// on standard output or in a new file. Written a page at a time: the command's memory does not
/// grow with the person.
struct ExportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Export everything held of one person of an app as JSON: devices, states, decisions, history (SPEC §13).")

    @OptionGroup var database: DatabaseOptions
    @Option(help: "The app id") var app: String
    @Option(help: "The user id, as the app reports it") var user: String
    @Option(help: "The file to create (mode 0600 from its creation; an existing file or symlink is refused); standard output without it")
    var output: String?

    func validate() throws {
        guard UUID(uuidString: app) != nil else { throw ValidationError("--app: not an app id") }
        guard EventSubmission.isValidIdentifier(user) else {
            throw ValidationError("--user: \(EventSubmission.identifierRule)")
        }
        if let output {
            // A symlink counts as existing, dangling or not: the file is never written through one.
            guard !FileManager.default.fileExists(atPath: output), (try? FileManager.default.destinationOfSymbolicLink(atPath: output)) == nil
            else { throw ValidationError("--output: \(output) exists") }
        }
    }

    func run() async throws {
        guard let appID = UUID(uuidString: app) else { return }
        let output = self.output
        try await withService(database) { service in
            // Before the file is made: an unknown app exports nothing rather than "no devices".
            try await requireApp(appID, in: service, "nothing was exported")
            let export = try await service.export.beginExport(appID: appID, userID: user)
            if let output {
                try await service.export.writeExport(export, toFile: output)
            } else {
                try await service.export.writeExport(export) { bytes in FileHandle.standardOutput.write(Data(bytes)) }
                FileHandle.standardOutput.write(Data("\n".utf8))
            }
        }
    }
}
