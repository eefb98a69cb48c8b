import Crypto
import EventLog
import Foundation
import LocationGateTestSupport
import PostgresClient
import Testing
@testable import LocationGateService

/// The files the archive commands write hold tenants' events: each is mode 0600 from its
/// creation (a temporary name in the destination's folder, never chmodded or reopened by
/// path), and a symlink planted where it goes is refused or replaced, never followed.
@Suite("Archive files: owner-only from creation, never through a symlink", .timeLimit(.minutes(2)))
struct ArchiveFileSafetyTests {
    /// A fresh folder, removed afterwards.
    static func withDirectory(_ body: (String) async throws -> Void) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("locgate-files-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await body(directory)
    }

    /// The entry itself (a symlink is not followed): its type and permission bits.
    static func entry(_ path: String) throws -> (type: FileAttributeType?, mode: Int?) {
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        return (attributes[.type] as? FileAttributeType, attributes[.posixPermissions] as? Int)
    }

    /// A file that must stay as it is, and a symlink to it at `path`.
    static func plantSymlink(at path: String, in directory: String) throws -> String {
        let victim = (directory as NSString).appendingPathComponent("victim")
        try Data("victim\n".utf8).write(to: URL(fileURLWithPath: victim))
        try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: victim)
        return victim
    }

    static func text(_ path: String) throws -> String {
        String(decoding: try Data(contentsOf: URL(fileURLWithPath: path)), as: UTF8.self)
    }

    @Test("While written, the file is only a 0600 regular file under a temporary name beside its destination; finished, it has its name, mode 0600, its content and checksum")
    func ownerOnlyFromCreation() async throws {
        try await Self.withDirectory { directory in
            let path = (directory as NSString).appendingPathComponent("out.csv")
            let writer = try ArchiveWriter(path: path)
            try writer.write("a,b\n")
            let during = try FileManager.default.contentsOfDirectory(atPath: directory)
            #expect(during.count == 1 && during.first != "out.csv", "\(during)")
            #expect((writer.temporaryPath as NSString).deletingLastPathComponent == directory)
            let temporary = try Self.entry(writer.temporaryPath)
            #expect(temporary.type == .typeRegular && temporary.mode == 0o600, "mode \(String(temporary.mode ?? 0, radix: 8))")
            #expect(!ArchiveWriter.entryExists(path), "the destination exists before the file is finished")
            let digest = try writer.finish()
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == ["out.csv"])
            let finished = try Self.entry(path)
            #expect(finished.type == .typeRegular && finished.mode == 0o600)
            #expect(try Self.text(path) == "a,b\n")
            #expect(digest == SHA256.hash(data: Data("a,b\n".utf8)).map { String(format: "%02x", $0) }.joined())
        }
    }

    @Test("A symlink at the destination, live or dangling, or planted while the file is written: refused, the file it names untouched, nothing left behind")
    func symlinkRefused() async throws {
        try await Self.withDirectory { directory in
            let path = (directory as NSString).appendingPathComponent("out.csv")
            let victim = try Self.plantSymlink(at: path, in: directory)
            #expect(throws: ArchiveFileError.self) { try ArchiveWriter(path: path) }
            let dangling = (directory as NSString).appendingPathComponent("dangling.csv")
            try FileManager.default.createSymbolicLink(atPath: dangling, withDestinationPath: directory + "/nowhere")
            #expect(throws: ArchiveFileError.self) { try ArchiveWriter(path: dangling) }
            #expect(!FileManager.default.fileExists(atPath: directory + "/nowhere"))

            // Planted between the start and the end of the writing.
            let late = (directory as NSString).appendingPathComponent("late.csv")
            let writer = try ArchiveWriter(path: late)
            try writer.write("secret\n")
            try FileManager.default.createSymbolicLink(atPath: late, withDestinationPath: victim)
            #expect(throws: ArchiveFileError.self) { try writer.finish() }
            writer.abandon()
            #expect(!FileManager.default.fileExists(atPath: writer.temporaryPath))
            #expect(try Self.entry(late).type == .typeSymbolicLink && Self.entry(path).type == .typeSymbolicLink)
            #expect(try Self.text(victim) == "victim\n")
            #expect(Set(try FileManager.default.contentsOfDirectory(atPath: directory)) == ["victim", "out.csv", "dangling.csv", "late.csv"])
        }
    }

    @Test("A file rewritten in place replaces a symlink at its name by a 0600 file, and leaves the file it named untouched")
    func replacingDoesNotFollow() async throws {
        try await Self.withDirectory { directory in
            let path = (directory as NSString).appendingPathComponent("archive.csv")
            let victim = try Self.plantSymlink(at: path, in: directory)
            let writer = try ArchiveWriter(path: path, replacing: true)
            try writer.write("sealed\n")
            _ = try writer.finish()
            let replaced = try Self.entry(path)
            #expect(replaced.type == .typeRegular && replaced.mode == 0o600)
            #expect(try Self.text(path) == "sealed\n" && Self.text(victim) == "victim\n")
        }
    }

    @Test("locgate archive read: a symlink at --output is refused and the file it names untouched; a new output is created 0600")
    func readOutput() async throws {
        let pool = try await TestDatabase.pool(size: 1)
        try await Self.withDirectory { directory in
            let archive = (directory as NSString).appendingPathComponent("plain.csv")
            try Data(EventLog.archiveHeader.utf8).write(to: URL(fileURLWithPath: archive))
            let files = ArchiveFiles(pool: pool, logger: TestDatabase.logger)
            let planted = (directory as NSString).appendingPathComponent("planted.csv")
            let victim = try Self.plantSymlink(at: planted, in: directory)
            await #expect(throws: ArchiveFileError.self) { try await files.read(file: archive, into: planted) }
            #expect(try Self.text(victim) == "victim\n" && Self.entry(planted).type == .typeSymbolicLink)
            let output = (directory as NSString).appendingPathComponent("restored.csv")
            let report = try await files.read(file: archive, into: output)
            #expect(report.events == 0 && report.format == 1)
            let created = try Self.entry(output)
            #expect(created.type == .typeRegular && created.mode == 0o600)
            #expect(try Self.text(output) == EventLog.archiveHeader)
            #expect(Set(try FileManager.default.contentsOfDirectory(atPath: directory)) == ["plain.csv", "planted.csv", "victim", "restored.csv"])
        }
        await pool.close()
    }

    @Test("locgate archive upgrade: a symlink planted at the old fixed temporary name is not followed; the upgraded file is 0600")
    func upgradeTemporary() async throws {
        let pool = try await TestDatabase.pool(size: 1)
        try await Self.withDirectory { directory in
            let archive = (directory as NSString).appendingPathComponent("plain.csv")
            try Data(EventLog.archiveHeader.utf8).write(to: URL(fileURLWithPath: archive))
            let victim = try Self.plantSymlink(at: archive + ".upgrading", in: directory)
            let reports = try await ArchiveFiles(pool: pool, logger: TestDatabase.logger).upgrade(file: archive)
            #expect(reports.count == 1 && reports.first?.events == 0)
            #expect(try Self.text(victim) == "victim\n")
            let upgraded = try Self.entry(archive)
            #expect(upgraded.type == .typeRegular && upgraded.mode == 0o600)
            #expect(try Self.text(archive) == ArchiveRecord.sealedHeader)
            #expect(Set(try FileManager.default.contentsOfDirectory(atPath: directory)) == ["plain.csv", "plain.csv.upgrading", "victim"])
        }
        await pool.close()
    }
}
