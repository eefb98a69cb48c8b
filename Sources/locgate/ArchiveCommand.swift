import ArgumentParser
import Foundation
import LocgateCommandSupport
import LocationAuthorization
import LocationGateService

/// `locgate archive --before DATE`: exports the log's oldest partitions recorded before DATE
/// to a checksummed CSV file and drops them (docs/operations.md, "The partitioned log").
struct ArchiveCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "archive",
        abstract: "Export the log's partitions recorded before a date to a CSV file, then drop them (run as the tables' owner).")

    @OptionGroup var database: DatabaseOptions
    @Option(help: "A date (YYYY-MM-DD, UTC) or an RFC 3339 time: partitions whose every event was recorded before it go")
    var before: String
    @Option(help: "The directory the archive file is written to") var directory = "."

    func validate() throws {
        guard Self.date(before) != nil else { throw ValidationError("--before: \(before) is not a date such as 2026-01-31") }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw ValidationError("--directory: \(directory) is not a directory")
        }
    }

    func run() async throws {
        guard let date = Self.date(before) else { throw ValidationError("--before: not a date") }
        let report = try await withPool(database, size: 1, label: "locgate.archive") { pool, logger in
            try await EventArchive(pool: pool, logger: logger).archive(before: date, into: directory)
        }
        try printJSON(report)
    }

    /// A date or an RFC 3339 time, read as the analytics' `from` and `to` are.
    static func date(_ text: String) -> Date? {
        RFC3339.date(from: text) ?? RFC3339.date(from: text + "T00:00:00Z")
    }
}
