import Crypto
import EventLog
import Foundation
import Logging
import PostgresClient

/// Reading archive files back, and rewriting those of earlier releases.
///
/// - `read` (`locgate archive read`) opens every sealed line whose key still exists and writes
///   the events in the plain format, for `\copy ... CSV HEADER`; the lines of erased people and
///   devices are only counted (`shredded`): nothing of them can be read any more.
/// - `upgrade` (`locgate archive upgrade`) rewrites plain files, which earlier releases wrote,
///   into the sealed format: the lines of people erased since are dropped (their streams no
///   longer have a snapshot, which every archived stream has until it is erased), the others
///   are sealed with their device's key. The new file replaces the old one by a rename, and the
///   archive's record takes its checksum.
///
/// Both run as the tables' owner, as `locgate archive` does.
public struct ArchiveFiles: Sendable {
    let pool: PostgresConnectionPool
    let logger: Logger

    public init(pool: PostgresConnectionPool, logger: Logger) {
        self.pool = pool
        self.logger = logger
    }

    public struct ReadReport: Sendable, Encodable {
        /// 1 for a plain file, 2 for a sealed one.
        public var format: Int
        public var events = 0
        /// Sealed lines whose person was erased: counted, not readable.
        public var shredded = 0
        public var output: String
    }

    /// Writes the events of `file` that can be read, in the plain format, to a new file at
    /// `output` (owner-only from its creation, `ArchiveWriter`; an existing `output`, a
    /// symlink included, is refused).
    public func read(file: String, into output: String) async throws -> ReadReport {
        try await pool.withConnection { connection in
            var lines = try ArchiveLines(path: file)
            let format = try Self.format(of: lines.next(), file: file)
            let writer = try ArchiveWriter(path: output)
            // Dropped unfinished on any error, the writer removes its temporary file.
            var report = ReadReport(format: format, output: output)
            var keys = ArchiveKeys()
            try writer.write(EventLog.archiveHeader)
            try Self.pages(of: &lines, file: file) { page in
                if format == 1 {
                    for line in page {
                        guard ArchiveRecord(plainLine: line) != nil else { throw ArchiveFileError.malformed("\(file): \(line.prefix(40))…") }
                        try writer.write(String(line) + "\n")
                        report.events += 1
                    }
                    return
                }
                let sealed = try page.map { line in
                    guard let sealed = ArchiveRecord.SealedLine(line) else { throw ArchiveFileError.malformed("\(file): \(line.prefix(40))…") }
                    return sealed
                }
                let found = try keys.lookUp(Set(sealed.map(\.keyID)), on: connection)
                var text = ""
                for line in sealed {
                    guard let key = found[line.keyID] else {
                        report.shredded += 1
                        continue
                    }
                    text += try line.open(with: key).plainLine
                    report.events += 1
                }
                try writer.write(text)
            }
            _ = try writer.finish()
            return report
        }
    }

    public struct UpgradeReport: Sendable, Encodable {
        public var file: String
        /// Lines sealed into the new file.
        public var events = 0
        /// Lines of people erased since the file was written: not carried over.
        public var dropped = 0
        public var sha256 = ""
        public var bytes = 0
        /// Whether a record in `event_archives` took the new checksum.
        public var recorded = false
    }

    /// Rewrites `file`, or, without one, every recorded archive that is still plain.
    public func upgrade(file: String?) async throws -> [UpgradeReport] {
        let logger = self.logger
        return try await pool.withConnection { connection in
            // As an archive does: erasures wait meanwhile, so that none deletes a person's key
            // between the check that the person exists and the sealing of their lines (which
            // would create a new key and keep them readable).
            try EventArchive.holdingRunLock(on: connection) {
                try Self.upgrade(file: file, logger: logger, on: connection)
            }
        }
    }

    static func upgrade(file: String?, logger: Logger, on connection: PostgresConnection) throws -> [UpgradeReport] {
        let files: [String]
        if let file {
            files = [file]
        } else {
            files = try connection.query(
                "SELECT file FROM event_archives WHERE kind = 'archive' AND format = 1 AND file IS NOT NULL ORDER BY id"
            ).map { try $0.decode(0) }
        }
        return try files.map { file in
            let report = try Self.upgrade(file, on: connection)
            logger.info("archive upgraded", metadata: ["file": "\(file)", "events": "\(report.events)", "dropped": "\(report.dropped)"])
            return report
        }
    }

    static func upgrade(_ file: String, on connection: PostgresConnection) throws -> UpgradeReport {
        let before = try digest(of: file)
        var lines = try ArchiveLines(path: file)
        let format = try Self.format(of: lines.next(), file: file)
        var report = UpgradeReport(file: file)
        guard format == 1 else {
            // Already sealed (an upgrade that stopped after its rename): only its record moves.
            return try record(report, sha256: before.sha256, bytes: before.bytes, replacing: before.sha256, on: connection)
        }
        // The sealed file is written beside the plain one under a name of its own and renamed
        // over it once synced (`ArchiveWriter`).
        let writer = try ArchiveWriter(path: file, replacing: true)
        var keys = ArchiveKeys()
        let sha256: String
        do {
            try writer.write(ArchiveRecord.sealedHeader)
            try pages(of: &lines, file: file) { page in
                let records = try page.map { line in
                    guard let record = ArchiveRecord(plainLine: line) else { throw ArchiveFileError.malformed("\(file): \(line.prefix(40))…") }
                    return record
                }
                let kept = try Self.unerased(records, on: connection)
                let found = try keys.ensure(Set(records.filter { kept.contains($0.stream) }.map(\.subject)), on: connection)
                var text = ""
                for record in records {
                    guard kept.contains(record.stream), let key = found[record.subject] else {
                        report.dropped += 1
                        continue
                    }
                    text += try record.sealedLine(with: key)
                    report.events += 1
                }
                try writer.write(text)
            }
            sha256 = try writer.finish()
        } catch {
            writer.abandon()
            throw error
        }
        return try record(report, sha256: sha256, bytes: writer.bytes, replacing: before.sha256, on: connection)
    }

    /// The archive's record takes the sealed file's checksum: the record of the plain file
    /// (found by its checksum, or by its path while still plain).
    static func record(
        _ report: UpgradeReport, sha256: String, bytes: Int, replacing plain: String, on connection: PostgresConnection
    ) throws -> UpgradeReport {
        var report = report
        report.sha256 = sha256
        report.bytes = bytes
        let updated = try connection.query(
            """
            UPDATE event_archives SET format = 2, sha256 = \(sha256), bytes = \(Int64(bytes))
            WHERE kind = 'archive' AND (sha256 = \(plain) OR (file = \(report.file) AND format = 1))
            RETURNING id
            """)
        report.recorded = updated.count > 0
        return report
    }

    /// The streams of `records` that still have a snapshot: every stream `locgate archive`
    /// exported keeps one until its person is erased.
    static func unerased(_ records: [ArchiveRecord], on connection: PostgresConnection) throws -> Set<StreamKey> {
        let streams = Array(Set(records.map(\.stream)))
        var present: Set<StreamKey> = []
        for chunk in streams.chunks(of: 5000) {
            for row in try connection.query(
                """
                SELECT DISTINCT s.app_id, s.user_id, s.device_id FROM stream_snapshots s
                JOIN unnest(\(PostgresArray(chunk.map(\.appID))), \(PostgresArray(chunk.map(\.userID))),
                            \(PostgresArray(chunk.map(\.deviceID)))) AS k(a, u, d)
                  ON s.app_id = k.a AND s.user_id = k.u AND s.device_id = k.d
                """) {
                present.insert(StreamKey(appID: try row.decode(0), userID: try row.decode(1), deviceID: try row.decode(2)))
            }
        }
        return present
    }

    static func format(of header: Substring?, file: String) throws -> Int {
        switch header.map({ $0 + "\n" }) {
        case EventLog.archiveHeader?: 1
        case ArchiveRecord.sealedHeader?: 2
        default: throw ArchiveFileError.malformed("\(file) does not start with an archive header")
        }
    }

    /// The lines after the header, 10,000 at a time.
    static func pages(of lines: inout ArchiveLines, file: String, _ body: ([Substring]) throws -> Void) throws {
        var page: [Substring] = []
        while let line = try lines.next() {
            if line.isEmpty { continue }
            page.append(line)
            if page.count == 10_000 {
                try body(page)
                page.removeAll(keepingCapacity: true)
            }
        }
        if !page.isEmpty { try body(page) }
    }

    static func digest(of file: String) throws -> (sha256: String, bytes: Int) {
        guard let handle = FileHandle(forReadingAtPath: file) else { throw ArchiveFileError.unreadable("cannot open \(file)") }
        defer { try? handle.close() }
        var hasher = SHA256()
        var bytes = 0
        while let data = try handle.read(upToCount: 1 << 20), !data.isEmpty {
            hasher.update(data: data)
            bytes += data.count
        }
        return (ArchiveWriter.hex(hasher.finalize()), bytes)
    }
}

/// The lines of a file, read a mebibyte at a time.
struct ArchiveLines {
    let handle: FileHandle
    var buffer: [UInt8] = []
    /// Where the next line starts in `buffer`.
    var start = 0
    var finished = false

    init(path: String) throws {
        guard let handle = FileHandle(forReadingAtPath: path) else { throw ArchiveFileError.unreadable("cannot open \(path)") }
        self.handle = handle
    }

    /// The next line without its newline; nil at the end of the file.
    mutating func next() throws -> Substring? {
        while true {
            if let newline = buffer[start...].firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffer[start..<newline], as: UTF8.self)
                start = newline + 1
                return Substring(line)
            }
            if finished {
                guard start < buffer.count else { return nil }
                let line = String(decoding: buffer[start...], as: UTF8.self)
                start = buffer.count
                return Substring(line)
            }
            buffer.removeFirst(start)
            start = 0
            if let data = try handle.read(upToCount: 1 << 20), !data.isEmpty {
                buffer.append(contentsOf: data)
            } else {
                finished = true
                try? handle.close()
            }
        }
    }
}
