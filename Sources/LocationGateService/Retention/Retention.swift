import EventLog
import Foundation
import LocationAuthorization
import Logging
import Metrics
import PostgresClient

/// Retention (SPEC §13): an app may keep its events for N days only. A run erases, app by app,
/// the events recorded more than N days ago, oldest first, a batch at a time:
///
/// - each device keeps its current state (`device_states` is not touched);
/// - where a device's events go, a snapshot of its state after the last of them is saved
///   (`stream_snapshots`, under a `retention` row of `event_archives`), so that replay starts
///   there and history and past states start there, as after `locgate archive`;
/// - the analytics counters of those events are kept (`archived_rollups`), so that grant
///   rates do not move and replay still agrees with the live figures;
/// - no file is written: `locgate archive` is the way to keep old events.
///
/// A device's events go as a prefix of its stream: a batch takes the app's oldest events in
/// global order and stops at the first one recorded after the cut, so a device never loses an
/// event while keeping an earlier one. Only events the analytics rollup has counted are taken.
///
/// Each batch is one short transaction under the persons' locks (taken shared, as appends
/// take them, so that an erasure of one of them is wholly before or after) and the snapshot
/// lock (a rebuild never reads a half-saved snapshot). Runs hold the archive lock shared: no
/// run while `locgate archive` exports, and no archive while a run deletes.
public struct Retention: Sendable {
    let pool: PostgresConnectionPool
    let logger: Logger

    public init(pool: PostgresConnectionPool, logger: Logger) {
        self.pool = pool
        self.logger = logger
    }

    /// What one run did.
    public struct Report: Sendable, Encodable, Equatable {
        /// Apps with a retention set.
        public var apps = 0
        public var events = 0
        /// Devices whose snapshot moved.
        public var devices = 0
        /// Whether the run stopped at its time budget with events left to erase.
        public var unfinished = false
        /// Whether another process held the run (or an archive was exporting): nothing done.
        public var skipped = false
    }

    /// One server's runs at a time across the cluster (a session lock, held for the run).
    static let runLockKey = Int64(0x7265_7465_6e74_696f)
    /// Events read per batch.
    static let batchSize = 2000

    let eventsErased = Counter(label: "locgate_retention_events_erased_total")
    let runs = Counter(label: "locgate_retention_runs_total")
    let runDuration = Timer(label: "locgate_retention_run_duration_seconds")

    /// Erases every app's events recorded more than its retention before `now`, for at most
    /// `budget`; a run that stops there says so (`unfinished`), and the next one goes on.
    public func run(now: Date = Date(), budget: Duration = .seconds(60)) async throws -> Report {
        let started = ContinuousClock.now
        let report = try await pool.withConnection { connection in
            try Self.run(now: now, budget: budget, on: connection)
        }
        let elapsed = ContinuousClock.now - started
        runs.increment()
        eventsErased.increment(by: report.events)
        runDuration.recordNanoseconds(elapsed.components.seconds * 1_000_000_000 + elapsed.components.attoseconds / 1_000_000_000)
        logger.info("retention run", metadata: [
            "apps": "\(report.apps)", "events": "\(report.events)", "devices": "\(report.devices)",
            "unfinished": "\(report.unfinished)", "skipped": "\(report.skipped)",
            "ms": "\(elapsed.components.seconds * 1000 + elapsed.components.attoseconds / 1_000_000_000_000_000)",
        ])
        return report
    }

    static func run(now: Date, budget: Duration, on connection: PostgresConnection) throws -> Report {
        var report = Report()
        guard try connection.query("SELECT pg_try_advisory_lock(\(runLockKey))").first?.decode(0, as: Bool.self) == true else {
            report.skipped = true
            return report
        }
        defer { _ = try? connection.query("SELECT pg_advisory_unlock(\(runLockKey))") }
        guard try connection.query("SELECT pg_try_advisory_lock_shared(\(EventArchive.runLockKey))").first?.decode(0, as: Bool.self) == true else {
            report.skipped = true
            return report
        }
        defer { _ = try? connection.query("SELECT pg_advisory_unlock_shared(\(EventArchive.runLockKey))") }
        let apps: [(UUID, Int64)] = try connection.query(
            "SELECT id, retention_days FROM apps WHERE retention_days IS NOT NULL ORDER BY id"
        ).map { (try $0.decode(0), try $0.decode(1)) }
        report.apps = apps.count
        let deadline = ContinuousClock.now + budget
        for (appID, days) in apps {
            let cut = now.addingTimeInterval(-Double(days) * 86_400)
            while true {
                guard ContinuousClock.now < deadline else {
                    report.unfinished = true
                    return report
                }
                let batch = try connection.transaction { connection in try erase(appID: appID, before: cut, on: connection) }
                report.events += batch.events
                report.devices += batch.devices
                if batch.events == 0 || !batch.full { break }
            }
        }
        return report
    }

    /// One batch of one app, in the caller's transaction.
    static func erase(appID: UUID, before cut: Date, on connection: PostgresConnection) throws -> (events: Int, devices: Int, full: Bool) {
        try connection.query("SET LOCAL lock_timeout = '10s'")
        try connection.query("SELECT pg_advisory_xact_lock(\(ArchiveSnapshot.lockKey))")
        let checkpoint = try AnalyticsRollup.checkpoint(on: connection)
        func candidates() throws -> (events: [RecordedEvent], full: Bool) {
            let window = try EventLog.oldestEvents(appID: appID, until: checkpoint, limit: batchSize, on: connection)
            let old = window.prefix { $0.recordedAt < cut }
            return (Array(old), old.count == batchSize)
        }
        let first = try candidates()
        guard !first.events.isEmpty else { return (0, 0, false) }
        let persons = Set(first.events.map(\.stream.userID))
        try EventLog.lockPersonsShared(persons.map { (appID, $0) }, on: connection)
        // Read again under the locks: an erasure that went first removed its person's events.
        let (read, full) = try candidates()
        let events = read.filter { persons.contains($0.stream.userID) }
        guard !events.isEmpty else { return (0, 0, full) }

        // The devices' snapshots, then their events folded on top, in order.
        let keys = Array(Set(events.map(\.stream)))
        var projection = Replay.Projection()
        projection.devices = try ArchiveSnapshot.streams(keys, on: connection)
        var lastOccurred: [StreamKey: Date] = [:]
        var through: [StreamKey: Int64] = [:]
        for event in events {
            projection.fold(event)
            lastOccurred[event.stream] = max(lastOccurred[event.stream] ?? event.occurredAt, event.occurredAt)
            through[event.stream] = event.version
        }
        let id = try connection.query(
            """
            INSERT INTO event_archives (before, boundary, partitions, events, file, sha256, bytes, format, kind)
            VALUES (\(cut), 0, '{}', \(Int64(events.count)), NULL, NULL, 0, 2, 'retention')
            RETURNING id
            """).first?.decode(0, as: Int64.self) ?? 0
        try ArchiveSnapshot.save(keys.compactMap { projection.devices[$0] }, lastOccurred: lastOccurred, archive: id, on: connection)
        try ArchiveSnapshot.save(projection.rollups, archive: id, on: connection)
        let forgotten = try connection.query(
            """
            SELECT locgate_forget_versions(\(appID), \(PostgresArray(keys.map(\.userID))), \(PostgresArray(keys.map(\.deviceID))),
                                           \(PostgresArray(keys.map { through[$0] ?? 0 })))
            """).first?.decode(0, as: Int64.self) ?? 0
        guard forgotten == Int64(events.count) else {
            throw PostgresError(.decoding, message: "retention: \(forgotten) events deleted for \(events.count) read; the batch is rolled back")
        }
        try ArchiveSnapshot.removeSuperseded(keys, by: id, on: connection)
        return (events.count, keys.count, full)
    }
}
