import ArgumentParser
import Foundation
import LocgateCommandSupport
import LocationAuthorization
import LocationGateService

/// `locgate archive`: writing archives (the default), reading them back, and rewriting those of
/// earlier releases (docs/operations.md, "The partitioned log"; docs/privacy.md).
struct ArchiveCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "archive",
        abstract: "Archive the log's old partitions to sealed files, read archives back, upgrade old ones (run as the tables' owner).",
        subcommands: [ArchiveWriteCommand.self, ArchiveReadCommand.self, ArchiveUpgradeCommand.self],
        defaultSubcommand: ArchiveWriteCommand.self)
}

/// `locgate archive [write] --before DATE`: exports the log's oldest partitions recorded before
/// DATE to a checksummed, sealed file and drops them.
struct ArchiveWriteCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "write",
        abstract: "Export the log's partitions recorded before a date to a sealed file, then drop them.")

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
        RFC3339.date(fromTimeOrDay: text)
    }
}

/// `locgate archive read --file F --output OUT`: the events of an archive that can still be read
/// (every person not erased since), in the plain CSV format `\copy ... CSV HEADER` loads.
struct ArchiveReadCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "read",
        abstract: "Write the readable events of an archive file (erased people's are not) as plain CSV.")

    @OptionGroup var database: DatabaseOptions
    @Option(help: "The archive file") var file: String
    @Option(help: "The plain CSV file to create (mode 0600 from its creation; an existing file or symlink is refused)") var output: String

    func validate() throws {
        guard FileManager.default.isReadableFile(atPath: file) else { throw ValidationError("--file: cannot read \(file)") }
        // A symlink counts as existing, dangling or not: the file is never written through one.
        guard !FileManager.default.fileExists(atPath: output), (try? FileManager.default.destinationOfSymbolicLink(atPath: output)) == nil
        else { throw ValidationError("--output: \(output) exists") }
    }

    func run() async throws {
        let report = try await withPool(database, size: 1, label: "locgate.archive") { pool, logger in
            try await ArchiveFiles(pool: pool, logger: logger).read(file: file, into: output)
        }
        try printJSON(report)
    }
}

/// `locgate archive upgrade [--file F]`: rewrites archives of earlier releases (plain CSV) into
/// the sealed format, without the people erased since they were written.
struct ArchiveUpgradeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "upgrade",
        abstract: "Rewrite plain archive files of earlier releases into sealed ones (every recorded one, or --file).")

    @OptionGroup var database: DatabaseOptions
    @Option(help: "One archive file (by default every recorded archive that is still plain)") var file: String?

    func run() async throws {
        let reports = try await withPool(database, size: 1, label: "locgate.archive") { pool, logger in
            try await ArchiveFiles(pool: pool, logger: logger).upgrade(file: file)
        }
        try printJSON(reports)
    }
}
