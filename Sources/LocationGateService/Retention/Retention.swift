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
/// - no file is written: `locgate archive` is the way to keep old events;
/// - the exposures of experiments stopped before the cut go (SPEC §16), their counts kept.
///
/// A device's events go as a prefix of its stream: a batch takes the app's oldest events in
/// global order and stops at the first one recorded after the cut, so a device never loses an
/// event while keeping an earlier one. Only events the analytics rollup has counted are taken.
///
/// Each batch is one short transaction under the persons' locks (taken shared, as appends
/// take them, so that an erasure of one of them is wholly before or after) and the snapshot
/// lock (a rebuild never reads a half-saved snapshot). Runs hold the archive lock shared: no
/// run while `locgate archive` exports, and no archive while a run deletes.
///
/// Each app's part of a run ends by forgetting the app's states that no device is in
/// (`UnusedStates`): the app versions that only erased events reported are folded into
/// "(erased)" there too when the device that kept one has since upgraded, and the maintained
/// counts drop their rows at zero. Every batch and that step hold a transaction id only while
/// they write, never while they wait for a lock, so a run never holds the change feed back for
/// longer than a batch takes (SPEC §5).
///
/// Every run records what it did as the app's last run (`retention_runs`: when, the cut, how
/// many events and how many devices, 0 when it erased nothing; `GET
/// /v1/apps/{appId}/retention`'s `lastRun`), so that an operator sees that the schedule runs.
/// `preview` counts what a run would erase now, erasing and recording nothing.
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
        /// Apps whose unused states were not forgotten (a lock not free in time): the next run
        /// tries again.
        public var statesNotForgotten = 0
    }

    /// An app's last run, as `lastRun` shows it: when it ran, the time before which recorded
    /// events were erased, and how many events and devices (0 when it erased nothing).
    public struct LastRun: Sendable, Encodable, Equatable {
        public var at: String
        public var cut: String
        public var events: Int64
        public var devices: Int64
    }

    /// What a run of one app would erase now (`locgate retention run --dry-run`).
    public struct Preview: Sendable, Encodable, Equatable {
        public var cut: String
        public var events: Int64
        public var devices: Int64
    }

    /// One server's runs at a time across the cluster (a session lock, held for the run).
    static let runLockKey = Int64(0x7265_7465_6e74_696f)
    /// Events read per batch.
    static let batchSize = 2000

    let eventsErased = Counter(label: "locgate_retention_events_erased_total")
    let runs = Counter(label: "locgate_retention_runs_total")
    let runDuration = Timer(label: "locgate_retention_run_duration_seconds")

    /// Erases every app's events recorded more than its retention before `now` (only `appID`'s,
    /// when given), for at most `budget`; a run that stops there says so (`unfinished`), and
    /// the next one goes on.
    public func run(now: Date = Date(), budget: Duration = .seconds(60), appID: UUID? = nil) async throws -> Report {
        let started = ContinuousClock.now
        let report = try await pool.withConnection { connection in
            try Self.run(now: now, budget: budget, appID: appID, on: connection)
        }
        let elapsed = ContinuousClock.now - started
        runs.increment()
        eventsErased.increment(by: report.events)
        runDuration.recordNanoseconds(elapsed.components.seconds * 1_000_000_000 + elapsed.components.attoseconds / 1_000_000_000)
        if report.statesNotForgotten > 0 {
            logger.warning("retention: unused states not forgotten (a lock was not free in time); the next run tries again", metadata: [
                "apps": "\(report.statesNotForgotten)",
            ])
        }
        logger.info("retention run", metadata: [
            "apps": "\(report.apps)", "events": "\(report.events)", "devices": "\(report.devices)",
            "unfinished": "\(report.unfinished)", "skipped": "\(report.skipped)",
            "statesNotForgotten": "\(report.statesNotForgotten)",
            "ms": "\(elapsed.components.seconds * 1000 + elapsed.components.attoseconds / 1_000_000_000_000_000)",
        ])
        return report
    }

    static func run(now: Date, budget: Duration, appID only: UUID? = nil, on connection: PostgresConnection) throws -> Report {
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
        let rows: PostgresRows
        if let only {
            rows = try connection.query("SELECT id, retention_days FROM apps WHERE retention_days IS NOT NULL AND id = \(only)")
        } else {
            rows = try connection.query("SELECT id, retention_days FROM apps WHERE retention_days IS NOT NULL ORDER BY id")
        }
        let apps: [(UUID, Int64)] = try rows.map { (try $0.decode(0), try $0.decode(1)) }
        report.apps = apps.count
        let startedAt = Date()
        let deadline = ContinuousClock.now + budget
        for (appID, days) in apps {
            let cut = now.addingTimeInterval(-Double(days) * 86_400)
            var erased = AppRun()
            // The app's part of the run is its last run however it ends: done, out of time (what
            // it erased so far), or a failed batch once it had erased something. One that
            // erased nothing is recorded too (SPEC §13), unless it failed.
            var ended = false
            defer {
                if ended || erased.events > 0 {
                    try? recordLastRun(appID: appID, at: startedAt, cut: cut, erased, on: connection)
                }
            }
            while true {
                guard ContinuousClock.now < deadline else {
                    report.unfinished = true
                    ended = true
                    return report
                }
                let earlier = erased.archives
                let batch = try connection.transaction { connection in
                    try erase(appID: appID, before: cut, earlierInRun: earlier, on: connection)
                }
                report.events += batch.events
                report.devices += batch.devices
                erased.events += Int64(batch.events)
                erased.devices += Int64(batch.newDevices)
                if let archive = batch.archive { erased.archives.append(archive) }
                if batch.events == 0 || !batch.full { break }
            }
            ended = true
            // SPEC §16: the exposures of the app's experiments stopped before the cut go (the
            // experiments' counts stay, as the analytics' do).
            try connection.query(
                """
                DELETE FROM experiment_exposures e USING experiments x
                WHERE e.app_id = \(appID) AND x.app_id = e.app_id AND x.key = e.experiment_key
                  AND x.state = 'stopped' AND x.stopped_at < \(cut)
                """)
            do {
                try UnusedStates.forget(appID: appID, on: connection)
            } catch {
                report.statesNotForgotten += 1
            }
        }
        return report
    }

    /// What a run erased of one app so far: events, devices (each counted once, however many
    /// batches took its events) and the `retention` rows of its batches.
    struct AppRun {
        var events: Int64 = 0
        var devices: Int64 = 0
        var archives: [Int64] = []
    }

    /// Records the app's last run (replacing the one before), one that erased nothing included.
    static func recordLastRun(appID: UUID, at: Date, cut: Date, _ run: AppRun, on connection: PostgresConnection) throws {
        try connection.query(
            """
            INSERT INTO retention_runs (app_id, at, cut, events, devices)
            VALUES (\(appID), \(at), \(cut), \(run.events), \(run.devices))
            ON CONFLICT (app_id) DO UPDATE SET at = excluded.at, cut = excluded.cut, events = excluded.events, devices = excluded.devices
            """)
    }

    /// The app's last run; nil before its first.
    static func lastRun(appID: UUID, on connection: PostgresConnection) throws -> LastRun? {
        try connection.query("SELECT at, cut, events, devices FROM retention_runs WHERE app_id = \(appID)").first.map { row in
            LastRun(
                at: RFC3339.string(from: try row.decode(0)), cut: RFC3339.string(from: try row.decode(1)),
                events: try row.decode(2), devices: try row.decode(3))
        }
    }

    /// How far retention may erase: the lower of the checkpoints of the two readers that count
    /// events as they arrive, the analytics rollup (SPEC §6) and the experiments' tally (§16).
    /// An event either has not read yet would be lost to its counts. The tally's checkpoint
    /// moves while no experiment exists too (it skips to the head), so an app without
    /// experiments waits for it no longer than for the rollup.
    static func countedThrough(on connection: PostgresConnection) throws -> LogPosition {
        Swift.min(
            try AnalyticsRollup.checkpoint(on: connection),
            try EventLog.checkpoint(named: ExperimentTally.checkpointName, on: connection))
    }

    /// What a run of the app measured against `now` would erase, erasing nothing: the prefix,
    /// in global order, of the app's events both counting readers have counted that were recorded
    /// before the cut (a run stops at the first event recorded after it), and the devices they
    /// belong to. Nil when the app keeps everything.
    static func preview(appID: UUID, now: Date, on connection: PostgresConnection) throws -> Preview? {
        guard let days = try connection.query("SELECT retention_days FROM apps WHERE id = \(appID)")
            .first?.decodeIfPresent(0, as: Int64.self) else { return nil }
        let cut = now.addingTimeInterval(-Double(days) * 86_400)
        let checkpoint = try countedThrough(on: connection)
        let transaction = String(checkpoint.transactionID)
        let row = try connection.query(
            """
            WITH kept AS (
                SELECT e.tx_id, e.position FROM events e
                WHERE e.app_id = \(appID) AND (e.tx_id, e.position) <= (\(transaction)::xid8, \(checkpoint.position))
                  AND e.recorded_at >= \(cut)
                ORDER BY e.tx_id, e.position
                LIMIT 1)
            SELECT count(*), count(DISTINCT (e.user_id, e.device_id)) FROM events e
            WHERE e.app_id = \(appID) AND (e.tx_id, e.position) <= (\(transaction)::xid8, \(checkpoint.position))
              AND (NOT EXISTS (SELECT 1 FROM kept) OR (e.tx_id, e.position) < (SELECT k.tx_id, k.position FROM kept k))
            """
        ).first
        return Preview(
            cut: RFC3339.string(from: cut), events: try row?.decode(0, as: Int64.self) ?? 0,
            devices: try row?.decode(1, as: Int64.self) ?? 0)
    }

    /// One batch of one app, in the caller's transaction. `earlierInRun`: the `retention` rows
    /// of the run's earlier batches of this app, so that `newDevices` counts only the devices no
    /// earlier batch of the run took events of.
    static func erase(
        appID: UUID, before cut: Date, earlierInRun: [Int64] = [], on connection: PostgresConnection
    ) throws -> (events: Int, devices: Int, full: Bool, archive: Int64?, newDevices: Int) {
        try connection.query("SET LOCAL lock_timeout = '10s'")
        // The rollup's lock, then the snapshots', then the persons': the order an erasure takes
        // them in. The rollup's, so that no counter moves while the batch's app versions are
        // folded (below).
        try connection.query("SELECT pg_advisory_xact_lock(\(AnalyticsRollup.lockKey))")
        try connection.query("SELECT pg_advisory_xact_lock(\(ArchiveSnapshot.lockKey))")
        let checkpoint = try countedThrough(on: connection)
        func candidates() throws -> (events: [RecordedEvent], full: Bool) {
            let window = try EventLog.oldestEvents(appID: appID, until: checkpoint, limit: batchSize, on: connection)
            let old = window.prefix { $0.recordedAt < cut }
            return (Array(old), old.count == batchSize)
        }
        let first = try candidates()
        guard !first.events.isEmpty else { return (0, 0, false, nil, 0) }
        let persons = Set(first.events.map(\.stream.userID))
        try EventLog.lockPersonsShared(persons.map { (appID, $0) }, on: connection)
        // Read again under the locks: an erasure that went first removed its person's events.
        let (read, full) = try candidates()
        let events = read.filter { persons.contains($0.stream.userID) }
        guard !events.isEmpty else { return (0, 0, full, nil, 0) }

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
        // Devices an earlier batch of this run took events of have their snapshot under that
        // batch's row until the line below supersedes it.
        var seen: Int64 = 0
        if !earlierInRun.isEmpty {
            seen = try connection.query(
                """
                SELECT count(*) FROM stream_snapshots s
                JOIN unnest(\(PostgresArray(keys.map(\.userID))), \(PostgresArray(keys.map(\.deviceID)))) AS k(u, d)
                  ON s.user_id = k.u AND s.device_id = k.d
                WHERE s.app_id = \(appID) AND s.archive_id = ANY(\(PostgresArray(earlierInRun)))
                """
            ).first?.decode(0, as: Int64.self) ?? 0
        }
        try ArchiveSnapshot.removeSuperseded(keys, by: id, on: connection)
        // App versions that only the erased events reported, and that no device is in a state
        // with now, are folded into "(erased)" as an erasure folds them (SPEC §13).
        try ErasedVersions.fold(projection.rollups.counts.keys.map(\.appVersion), appID: appID, on: connection)
        return (events.count, keys.count, full, id, keys.count - Int(seen))
    }
}
