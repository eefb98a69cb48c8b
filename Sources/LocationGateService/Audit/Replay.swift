import EventLog
import Foundation
import LocationAuthorization
import Logging
import PostgresClient

/// The audit replay of SPEC §7: recompute every projection from the log with the rules in this
/// build, then rebuild, verify, or show what would change.
public struct Replay: Sendable {
    let pool: PostgresConnectionPool
    /// Where `verify` and `diff` read (a standby when one is configured); `rebuild` reads and
    /// writes the primary in one transaction.
    let reads: StandbyReads
    let logger: Logger
    /// Limits the replay to one app; nil replays every app.
    public var appID: UUID?

    public init(pool: PostgresConnectionPool, readPool: PostgresConnectionPool? = nil, appID: UUID? = nil, logger: Logger) {
        self.pool = pool
        self.reads = StandbyReads(primary: pool, standby: readPool)
        self.appID = appID
        self.logger = logger
    }

    /// Every projection as the log and the current rules give it.
    public struct Projection: Sendable {
        public var devices: [StreamKey: DeviceStateStore.Row] = [:]
        public var rollups = RollupCounts()
        public var events = 0
        /// Where the read ended: what the rebuilt rollups have counted.
        public var end = LogPosition.start
        /// Events the current rules reject (a stored event that no longer applies).
        public var rejected: [(StreamKey, Int64, String)] = []

        /// Applies one stored event with the append path's own function.
        mutating func fold(_ recorded: RecordedEvent) {
            var device = devices[recorded.stream]
                ?? DeviceStateStore.Row(key: recorded.stream, version: 0, state: DeviceState(), milestones: [])
            guard let event = AuditCapability.decode(recorded) else {
                rejected.append((recorded.stream, recorded.version, "event cannot be decoded"))
                return
            }
            do {
                let outcome = try DeviceProjector.apply(event, to: &device)
                rollups.add(
                    appID: recorded.stream.appID, occurredAt: recorded.occurredAt, type: recorded.type,
                    data: recorded.data, outcome: outcome)
            } catch {
                rejected.append((recorded.stream, recorded.version, error.message))
            }
            device.version = recorded.version
            devices[recorded.stream] = device
            events += 1
        }
    }

    /// Reads the whole log in global order (which agrees with every stream's version order) and
    /// folds it with the same function the append path uses.
    public func recompute(pageSize: Int = 10_000, progress: @escaping @Sendable (Int) -> Void = { _ in }) async throws -> Projection {
        try await recompute(from: reads.pool, pageSize: pageSize, progress: progress)
    }

    func recompute(from source: PostgresConnectionPool, pageSize: Int = 10_000, progress: @escaping @Sendable (Int) -> Void) async throws -> Projection {
        // One snapshot for the archive's boundary and the log after it: an archive that
        // commits meanwhile (a standby replaying it, too) is not seen half.
        try await source.withConnection { [self] connection in
            try connection.transaction { connection in
                try connection.query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                return try recompute(until: nil, pageSize: pageSize, progress: progress, on: connection)
            }
        }
    }

    /// Starts from the archive boundary (`locgate archive`): the snapshot of every archived
    /// stream and the counters of the archived events, then reads what the log still holds,
    /// which is every stream's versions after its snapshot (the log is partitioned by position,
    /// and a stream's versions are in position order).
    func recompute(until end: LogPosition?, pageSize: Int, progress: (Int) -> Void, on connection: PostgresConnection) throws -> Projection {
        var projection = try ArchiveSnapshot.load(appID: appID, on: connection)
        var position = LogPosition.start
        while true {
            var page = try EventLog.read(after: position, limit: pageSize, outcomes: false, on: connection)
            let full = page.count == pageSize
            if let last = page.last { position = last.logPosition }
            if let end { page.removeAll { $0.logPosition > end } }
            for recorded in page where appID == nil || recorded.stream.appID == appID {
                projection.fold(recorded)
            }
            if let last = page.last { projection.end = last.logPosition }
            progress(projection.events)
            if !full || (end.map { position >= $0 } ?? false) { return projection }
        }
    }

    /// Rebuilds `device_states` and `analytics_rollups` from the log, under the rollup lock: the
    /// rollup subscriber first counts everything readable, then the replay recomputes up to that
    /// checkpoint and replaces the counters, so no event is counted twice or missed. Device rows
    /// newer than the replay (appends during it) are kept.
    public func rebuild(progress: @escaping @Sendable (Int) -> Void = { _ in }) async throws -> Projection {
        try await pool.transaction { [self] connection in
            try connection.query("SELECT pg_advisory_xact_lock(\(AnalyticsRollup.lockKey))")
            // No archive commits while this reads its boundary and then the log.
            try connection.query("SELECT pg_advisory_xact_lock_shared(\(ArchiveSnapshot.lockKey))")
            while try AnalyticsRollup.countPage(pageSize: 10_000, locked: true, on: connection) == 10_000 {}
            let checkpoint = try AnalyticsRollup.checkpoint(on: connection)
            let projection = try recompute(until: checkpoint, pageSize: 10_000, progress: progress, on: connection)
            for (appID, devices) in Dictionary(grouping: projection.devices.values, by: \.key.appID) {
                for chunk in devices.chunks(of: 2000) {
                    try DeviceStateStore.save(appID: appID, Array(chunk), on: connection)
                }
            }
            try DeviceStateStore.recount(appID: appID, on: connection)
            if let appID {
                try connection.query("DELETE FROM analytics_rollups WHERE app_id = \(appID)")
                try connection.query("DELETE FROM analytics_totals WHERE app_id = \(appID)")
                try connection.query("DELETE FROM analytics_days WHERE app_id = \(appID)")
            } else {
                try connection.query("DELETE FROM analytics_rollups")
                try connection.query("DELETE FROM analytics_totals")
                try connection.query("DELETE FROM analytics_days")
            }
            try projection.rollups.upsert(on: connection)
            return projection
        }
    }

    /// One way the stored projection differs from the log.
    public struct Difference: Sendable, Hashable, CustomStringConvertible {
        public var subject: String
        public var detail: String
        public var description: String { "\(subject): \(detail)" }
    }

    /// Compares the stored projections with a recomputation; empty when they agree.
    public func verify(progress: @escaping @Sendable (Int) -> Void = { _ in }) async throws -> [Difference] {
        // Every append acknowledged before the call counted first (a transaction elsewhere in
        // the cluster can keep them out of global order for a while), then the recomputation.
        try await AnalyticsRollup(pool: pool, logger: logger).catchUp(waitForInFlightCommits: true, patience: .seconds(60))
        // A standby once it has replayed all of that, else the primary.
        let source = try await reads.caughtUp(patience: .seconds(60))
        let projection = try await recompute(from: source, progress: progress)
        var differences = projection.rejected.map { Difference(subject: "\($0.0) v\($0.1)", detail: "rejected by the current rules: \($0.2)") }
        let stored = try await storedDevices(source)
        for (key, device) in projection.devices {
            guard let row = stored[key] else {
                differences.append(Difference(subject: "\(key)", detail: "missing from device_states"))
                continue
            }
            if row.version != device.version {
                differences.append(Difference(subject: "\(key)", detail: "stored version \(row.version), log \(device.version)"))
            } else if row.state != device.state {
                differences.append(Difference(subject: "\(key)", detail: "stored state differs: \(row.state.storedJSON) vs \(device.state.storedJSON)"))
            } else if row.milestones != device.milestones {
                differences.append(Difference(subject: "\(key)", detail: "stored milestones \(row.milestones.rawValue), log \(device.milestones.rawValue)"))
            }
        }
        for key in stored.keys where projection.devices[key] == nil {
            differences.append(Difference(subject: "\(key)", detail: "in device_states but not in the log"))
        }
        let storedRollups = try await storedRollups(source)
        for (key, count) in projection.rollups.counts where storedRollups[key] != count {
            differences.append(Difference(subject: "rollup \(key.metric)/\(key.key) \(key.day) \(key.platform)", detail: "stored \(storedRollups[key] ?? 0), log \(count)"))
        }
        for (key, count) in storedRollups where projection.rollups.counts[key] == nil {
            differences.append(Difference(subject: "rollup \(key.metric)/\(key.key) \(key.day) \(key.platform)", detail: "stored \(count), log 0"))
        }
        // The all-time totals must be the daily counters summed.
        let totals = try await source.withConnection { [appID] connection in
            try connection.query(
                """
                SELECT count(*) FROM analytics_totals t
                FULL JOIN (SELECT app_id, platform, os_major, app_version, metric, key, sum(count) AS count
                           FROM analytics_rollups GROUP BY 1, 2, 3, 4, 5, 6) r
                  USING (app_id, platform, os_major, app_version, metric, key)
                WHERE t.count IS DISTINCT FROM r.count AND (\(appID?.uuidString)::uuid IS NULL OR app_id = \(appID?.uuidString)::uuid)
                """).first?.decode(0, as: Int64.self) ?? 0
        }
        if totals > 0 {
            differences.append(Difference(subject: "analytics_totals", detail: "\(totals) totals differ from the daily counters summed"))
        }
        let days = try await source.withConnection { [appID] connection in
            try connection.query(
                """
                SELECT count(*) FROM analytics_days t
                FULL JOIN (SELECT app_id, day, metric, key, sum(count) AS count FROM analytics_rollups GROUP BY 1, 2, 3, 4) r
                  USING (app_id, day, metric, key)
                WHERE t.count IS DISTINCT FROM r.count AND (\(appID?.uuidString)::uuid IS NULL OR app_id = \(appID?.uuidString)::uuid)
                """).first?.decode(0, as: Int64.self) ?? 0
        }
        if days > 0 {
            differences.append(Difference(subject: "analytics_days", detail: "\(days) day counters differ from the daily counters summed"))
        }
        // The maintained device counts must be device_states counted.
        let counts = try await source.withConnection { [appID] connection in
            try connection.query(
                """
                SELECT count(*) FROM (SELECT app_id, state_id, sum(devices) AS n FROM device_counts GROUP BY 1, 2 HAVING sum(devices) <> 0) c
                FULL JOIN (SELECT app_id, hashtextextended(state::text, 0) AS state_id, count(*) AS n FROM device_states GROUP BY 1, 2) d
                  USING (app_id, state_id)
                WHERE c.n IS DISTINCT FROM d.n AND (\(appID?.uuidString)::uuid IS NULL OR app_id = \(appID?.uuidString)::uuid)
                """).first?.decode(0, as: Int64.self) ?? 0
        }
        if counts > 0 {
            differences.append(Difference(subject: "device_counts", detail: "\(counts) states counted differently from device_states"))
        }
        // Every counted state is in the dictionary, under its own hash.
        let kinds = try await source.withConnection { connection in
            try connection.query(
                """
                SELECT count(*) FROM (SELECT DISTINCT state_id FROM device_counts) c
                LEFT JOIN device_state_kinds k USING (state_id)
                WHERE k.state IS NULL OR hashtextextended(k.state::text, 0) <> c.state_id
                """).first?.decode(0, as: Int64.self) ?? 0
        }
        if kinds > 0 {
            differences.append(Difference(subject: "device_state_kinds", detail: "\(kinds) counted states missing or under another hash"))
        }
        return differences
    }

    /// What a rebuild would change in gate decisions, per feature and reason, before anything is
    /// written: the stored states against the states the current rules compute.
    public struct DecisionDiff: Sendable {
        public var devices = 0
        public var devicesChanged = 0
        /// "feature: fromReason -> toReason" with its device count.
        public var changes: [String: Int] = [:]
        public var samples: [String] = []
    }

    public func diff(sampleSize: Int = 10, progress: @escaping @Sendable (Int) -> Void = { _ in }) async throws -> DecisionDiff {
        let projection = try await recompute(from: reads.pool, progress: progress)
        let stored = try await storedDevices(reads.pool)
        let catalog = FeatureCatalog(pool: reads.pool)
        var report = DecisionDiff()
        for (key, device) in projection.devices.sorted(by: { $0.key < $1.key }) {
            report.devices += 1
            let features = try await catalog.features(appID: key.appID)
            let before = stored[key]?.state ?? DeviceState()
            var changed = false
            for feature in features {
                let old = before.decide(feature, version: stored[key]?.version ?? 0)
                let new = device.state.decide(feature, version: device.version)
                guard old.enabled != new.enabled || old.reason != new.reason || old.action != new.action else { continue }
                changed = true
                report.changes["\(feature.key): \(old.reason.rawValue) -> \(new.reason.rawValue)", default: 0] += 1
                if report.samples.count < sampleSize {
                    report.samples.append("\(key) \(feature.key): \(old.reason.rawValue)/\(old.action.rawValue) -> \(new.reason.rawValue)/\(new.action.rawValue)")
                }
            }
            if changed { report.devicesChanged += 1 }
        }
        return report
    }

    private func storedDevices(_ source: PostgresConnectionPool) async throws -> [StreamKey: DeviceStateStore.Row] {
        try await source.withConnection { connection in
            var devices: [StreamKey: DeviceStateStore.Row] = [:]
            let filter: PostgresQuery = appID.map { "WHERE app_id = \($0)" } ?? ""
            for row in try connection.query(PostgresQuery(
                unsafeSQL: "SELECT app_id, user_id, device_id, version, state::text, milestones, install_id FROM device_states " + filter.sql,
                binds: filter.binds)) {
                let key = StreamKey(appID: try row.decode(0), userID: try row.decode(1), deviceID: try row.decode(2))
                var state = try JSONText.state(try row.decode(4))
                state.installID = try row.decodeIfPresent(6, as: String.self)
                devices[key] = DeviceStateStore.Row(
                    key: key, version: try row.decode(3), state: state, milestones: DeviceMilestones(rawValue: try row.decode(5)))
            }
            return devices
        }
    }

    private func storedRollups(_ source: PostgresConnectionPool) async throws -> [RollupKey: Int64] {
        try await source.withConnection { connection in
            var rollups: [RollupKey: Int64] = [:]
            let filter: PostgresQuery = appID.map { "WHERE app_id = \($0)" } ?? ""
            for row in try connection.query(PostgresQuery(
                unsafeSQL: "SELECT app_id, day::text, platform, os_major, app_version, metric, key, count FROM analytics_rollups " + filter.sql,
                binds: filter.binds)) {
                rollups[RollupKey(
                    appID: try row.decode(0), day: try row.decode(1), platform: try row.decode(2), osMajor: try row.decode(3),
                    appVersion: try row.decode(4), metric: try row.decode(5), key: try row.decode(6))] = try row.decode(7)
            }
            return rollups
        }
    }
}
