import EventLog
import Foundation
import Logging
import PostgresClient

/// `locgate archive --before DATE`: exports the oldest partitions of the log whose every event
/// was recorded before DATE to a checksummed file, moves the replay's starting point (the
/// snapshot of device states and the archived analytics counters) past them, and drops them.
/// Device states, rollups and the record of the archive stay. Each event's line is sealed with
/// its device's key (`ArchiveRecord`, `ArchiveKeys`), which an erasure deletes.
///
/// Only whole partitions go, oldest first, and never one that holds or will hold the positions
/// of new appends. Run it as the tables' owner (the role of `locgate migrate`): dropping a
/// partition is the one change to the log the service role may not make.
public struct EventArchive: Sendable {
    let pool: PostgresConnectionPool
    let logger: Logger

    public init(pool: PostgresConnectionPool, logger: Logger) {
        self.pool = pool
        self.logger = logger
    }

    /// What an archive did; `partitions` is empty when nothing was old enough.
    public struct Report: Sendable, Encodable {
        public var partitions: [String] = []
        public var events = 0
        /// Every event with a position below it is archived now.
        public var boundary: Int64 = 0
        /// Streams whose snapshot moved.
        public var devices = 0
        public var rejected = 0
        public var file: String?
        public var sha256: String?
        public var bytes = 0
    }

    public enum ArchiveError: Error, CustomStringConvertible {
        case busy
        case notCounted(Int64)
        case file(String)

        public var description: String {
            switch self {
            case .busy: "another archive is running (or a retention run held the archive lock for over 90 s)"
            case .notCounted(let events):
                "\(events) events of the partitions to archive are not counted in the analytics rollups yet (a transaction elsewhere holds the readable horizon back): try again"
            case .file(let message): "the archive file: \(message)"
            }
        }
    }

    /// One archive run at a time (a session lock, held for the whole run); erasures and
    /// retention runs take it shared, so that none of them runs while an archive exports.
    static let runLockKey = Int64(0x6172_6368_6976_66)

    /// Archives, on one connection, without a long writing transaction: a transaction that
    /// holds a transaction id holds back the global order every subscriber reads
    /// (`EventLog.read`), so the export reads with plain statements, the snapshot's rows are
    /// written 2,000 a statement, and only the last, short transaction records the archive
    /// and drops the partitions (briefly taking `events` exclusively).
    ///
    /// Its memory is bounded whatever the number of events and streams: the file is written
    /// `pageSize` events at a time in global order, the snapshot is folded `pageSize` events at
    /// a time in stream order and saved as each stream completes, and only the analytics
    /// counters (one per day, platform, version and measure, not per event) are kept to the end.
    public func archive(before: Date, into directory: String, pageSize: Int = 10_000) async throws -> Report {
        // Everything acknowledged counted by the rollup first, as `verify` does.
        try await AnalyticsRollup(pool: pool, logger: logger).catchUp(waitForInFlightCommits: true, patience: .seconds(60))
        let logger = self.logger
        return try await pool.withConnection { connection in
            try Self.holdingRunLock(on: connection) {
                try Self.archive(before: before, into: directory, pageSize: pageSize, logger: logger, on: connection)
            }
        }
    }

    /// Runs `body` holding the archive lock (`runLockKey`) for the session. Erasures and
    /// retention runs hold it shared for a moment (a retention run for up to a minute): it
    /// waits for them, up to 90 s, and then gives up as for another archive (`busy`).
    static func holdingRunLock<T>(on connection: PostgresConnection, _ body: () throws -> T) throws -> T {
        try connection.query("SET lock_timeout = '90s'")
        var locked = false
        var failure: (any Error)?
        do {
            try connection.query("SELECT pg_advisory_lock(\(runLockKey))")
            locked = true
        } catch {
            failure = error
        }
        _ = try? connection.query("RESET lock_timeout")
        guard locked else {
            if let error = failure as? PostgresError, error.sqlState == "55P03" { throw ArchiveError.busy }
            throw failure ?? ArchiveError.busy
        }
        defer { _ = try? connection.query("SELECT pg_advisory_unlock(\(runLockKey))") }
        return try body()
    }

    static func archive(
        before: Date, into directory: String, pageSize: Int, logger: Logger, on connection: PostgresConnection
    ) throws -> Report {
        try ArchiveSnapshot.removeUnrecorded(on: connection)
        // 1. Which partitions: SHARE locks wait for appends still writing them (none can
        //    start: new positions are past them); the rollup must have counted them.
        let candidates = try connection.transaction { connection -> [EventLog.Partition] in
            try connection.query("SET LOCAL lock_timeout = '60s'")
            let candidates = try archivable(before: before, on: connection)
            guard let last = candidates.last else { return [] }
            let checkpoint = try AnalyticsRollup.checkpoint(on: connection)
            let uncounted = try connection.query(
                """
                SELECT count(*) FROM events WHERE position < \(last.high)
                  AND (tx_id, position) > (\(String(checkpoint.transactionID))::xid8, \(checkpoint.position))
                """).first?.decode(0, as: Int64.self) ?? 0
            guard uncounted == 0 else { throw ArchiveError.notCounted(uncounted) }
            return candidates
        }
        guard let first = candidates.first, let last = candidates.last else { return Report() }
        let boundary = last.high
        let id = try connection.query("SELECT nextval(pg_get_serial_sequence('event_archives', 'id'))").first?.decode(0, as: Int64.self) ?? 0

        // 2. The file, in global order, a page of events at a time. It holds every tenant's
        //    events: owner-only (0600) from its creation, and named only once written and
        //    synced (`ArchiveWriter`); an existing file of that name is never replaced.
        let path = (directory as NSString).appendingPathComponent("locgate-events-\(first.low)-\(boundary - 1).csv")
        let file: ArchiveWriter
        do { file = try ArchiveWriter(path: path) } catch { throw ArchiveError.file("cannot create \(path): \(error)") }
        // Set once the archive may have been recorded: from then on the file is never deleted,
        // since the partitions it alone holds may be gone.
        var recorded = false
        defer {
            file.abandon()
            if !recorded, file.placed { try? FileManager.default.removeItem(atPath: path) }
        }
        try file.write(ArchiveRecord.sealedHeader)
        var position = LogPosition.start
        var events = 0
        var archiveKeys = ArchiveKeys()
        while true {
            let page = try EventLog.exportPage(below: boundary, after: position, limit: pageSize, on: connection)
            let keys = try archiveKeys.ensure(
                Set(page.map { ArchiveKeys.Subject(appID: $0.stream.appID, userID: $0.stream.userID, deviceID: $0.stream.deviceID) }),
                on: connection)
            var lines = ""
            for event in page {
                let record = ArchiveRecord(event)
                guard let key = keys[record.subject] else { throw ArchiveError.file("no archive key for an event of position \(record.position)") }
                lines += try record.sealedLine(with: key)
            }
            try file.write(lines)
            events += page.count
            guard let next = page.last, page.count == pageSize else { break }
            position = next.logPosition
        }
        let digest = try file.finish()
        let bytes = file.bytes

        // 3. The snapshot at the new boundary (each archived stream's previous snapshot folded
        //    with its archived events), saved as each stream completes, and the counters of
        //    this archive's events alone. Not yet counted: no archive row names them.
        let folded = try ArchiveSnapshot.fold(below: boundary, archive: id, pageSize: pageSize, on: connection)
        try ArchiveSnapshot.save(folded.rollups, archive: id, on: connection)

        // 4. Record the archive and drop the partitions, in one short transaction.
        let names = candidates.map(\.name)
        do {
            try recordAndDrop(
                id: id, before: before, boundary: boundary, names: names, events: events, path: path, digest: digest, bytes: bytes,
                logger: logger, on: connection)
            recorded = true
        } catch {
            // A COMMIT whose answer was lost may have dropped the partitions: keep the file
            // unless the database says the archive is not recorded.
            switch try? connection.query("SELECT 1 FROM event_archives WHERE id = \(id)").count {
            case 0?:
                throw error
            case _?:
                recorded = true
                logger.warning("archive: the commit's answer was lost, but the archive is recorded", metadata: ["file": "\(path)"])
            case nil:
                recorded = true
                logger.error("archive: the outcome is unknown; the file is kept", metadata: ["file": "\(path)", "error": "\(error)"])
                throw error
            }
        }
        logger.info("archived", metadata: ["partitions": "\(names)", "events": "\(events)", "file": "\(path)"])
        try ArchiveSnapshot.removeSuperseded(by: id, on: connection)
        return Report(
            partitions: names, events: events, boundary: boundary, devices: folded.devices,
            rejected: folded.rejected, file: path, sha256: digest, bytes: bytes)
    }

    /// How long the DROP waits for `events` at a time, and how often it tries. While it waits
    /// for ACCESS EXCLUSIVE, every append queues behind it: a short wait, tried again after a
    /// pause in which the queue drains, keeps that stall under `dropLockTimeout`.
    static let dropLockTimeout = "2s"
    static let dropAttempts = 15

    /// Records the archive and drops its partitions in one transaction, trying again when
    /// `events` could not be locked in time (SQLSTATE 55P03).
    static func recordAndDrop(
        id: Int64, before: Date, boundary: Int64, names: [String], events: Int, path: String, digest: String, bytes: Int,
        logger: Logger, on connection: PostgresConnection
    ) throws {
        for attempt in 1...dropAttempts {
            do {
                try connection.transaction { connection in
                    try connection.query("SELECT pg_advisory_xact_lock(\(ArchiveSnapshot.lockKey))")
                    try connection.query("SET LOCAL lock_timeout = '\(unescaped: dropLockTimeout)'")
                    try connection.query(
                        """
                        INSERT INTO event_archives (id, before, boundary, partitions, events, file, sha256, bytes, format)
                        VALUES (\(id), \(before), \(boundary), \(PostgresArray(names)), \(Int64(events)), \(path), \(digest), \(Int64(bytes)), 2)
                        """)
                    try connection.query(PostgresQuery(unsafeSQL: "DROP TABLE " + names.map { "\"\($0)\"" }.joined(separator: ", ")))
                }
                return
            } catch let error as PostgresError where error.sqlState == "55P03" && attempt < dropAttempts {
                logger.info("archive: events is busy; the drop tries again", metadata: ["attempt": "\(attempt)"])
                Thread.sleep(forTimeInterval: 0.5)
            }
        }
    }

    /// fsync(2) of a folder, so that a file created in it survives a crash.
    static func synchronizeDirectory(_ directory: String) throws {
        let descriptor = open(directory, O_RDONLY | O_DIRECTORY)
        guard descriptor >= 0 else { throw ArchiveError.file("cannot open \(directory) to sync it") }
        defer { close(descriptor) }
        guard fsync(descriptor) == 0 else { throw ArchiveError.file("cannot sync \(directory)") }
    }

    /// The oldest partitions, in order, whose every event was recorded before `before`, locked
    /// in SHARE mode (which waits for the appends still writing them and keeps new ones out).
    /// A partition that holds or will hold the positions of new appends is never one of them.
    static func archivable(before: Date, on connection: PostgresConnection) throws -> [EventLog.Partition] {
        let next = try connection.query(
            "SELECT CASE WHEN is_called THEN last_value + 1 ELSE last_value END FROM events_position_seq"
        ).first?.decode(0, as: Int64.self) ?? 0
        var candidates: [EventLog.Partition] = []
        for partition in try EventLog.partitions(on: connection) {
            guard partition.high <= next else { break }
            try connection.query(PostgresQuery(unsafeSQL: "LOCK TABLE \"\(partition.name)\" IN SHARE MODE"))
            let old = try connection.query(
                "SELECT coalesce(max(recorded_at) < \(before), true) FROM \(unescaped: "\"\(partition.name)\"")"
            ).first?.decode(0, as: Bool.self) ?? false
            guard old else { break }
            candidates.append(partition)
        }
        return candidates
    }
}
