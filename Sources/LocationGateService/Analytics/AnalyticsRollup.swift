import EventLog
import Foundation
import LocationAuthorization
import LocationGateJSON
import Logging
import PostgresClient
import ServiceLifecycle

/// One counter of `analytics_rollups`.
public struct RollupKey: Sendable, Hashable {
    public var appID: UUID
    public var day: String
    public var platform: String
    public var osMajor: Int
    public var appVersion: String
    public var metric: String
    public var key: String

    var sortKey: String { "\(appID.lowercasedText)\u{1}\(metric)\u{1}\(day)\u{1}\(platform)\u{1}\(osMajor)\u{1}\(appVersion)\u{1}\(key)" }
}

/// Counters added up in memory before one upsert.
public struct RollupCounts: Sendable {
    public private(set) var counts: [RollupKey: Int64] = [:]

    public init() {}

    /// Adds what one stored event counts for.
    mutating func add(appID: UUID, occurredAt: Date, type: String, data: String, outcome: EventOutcome) {
        guard outcome.analytics != nil else { return }
        let choice = type == EventType.promptResponded.rawValue ? Self.choice(in: data) : nil
        add(appID: appID, occurredAt: occurredAt, type: type, choice: choice, outcome: outcome)
    }

    /// Adds what one stored event counts for, given a `promptResponded`'s choice.
    mutating func add(appID: UUID, occurredAt: Date, type: String, choice: PromptChoice?, outcome: EventOutcome) {
        guard let analytics = outcome.analytics else { return }
        let day = Self.day(occurredAt)
        for (metric, key, count) in analytics.counters(effects: outcome.effects, choice: choice, type: EventType(rawValue: type)) {
            counts[RollupKey(
                appID: appID, day: day, platform: analytics.platform, osMajor: analytics.osMajor,
                appVersion: analytics.appVersion, metric: metric, key: key), default: 0] += count
        }
    }

    /// Adds a counter as stored (the archived counters a replay starts from).
    mutating func add(_ key: RollupKey, _ count: Int64) {
        counts[key, default: 0] += count
    }

    static func choice(in data: String) -> PromptChoice? {
        JSONNode.parse(data)?.value("choice", as: PromptChoice.self)
    }

    /// The UTC day of a time, as `YYYY-MM-DD`.
    static func day(_ date: Date) -> String {
        String(PostgresTimestamp.format(date).prefix(10))
    }

    /// Counters in key order, each key's sort text made once (making it in the comparison
    /// formatted a UUID per comparison: a sixth of a busy server's time).
    static func sorted(_ counts: [RollupKey: Int64]) -> [(key: RollupKey, value: Int64)] {
        counts.map { (sortKey: $0.key.sortKey, row: (key: $0.key, value: $0.value)) }
            .sorted { $0.sortKey < $1.sortKey }
            .map(\.row)
    }

    /// Adds the counters to the live rollups, in key order (so concurrent writers lock rows in
    /// the same order), and to their companions by day alone and over all time.
    func upsert(on connection: PostgresConnection) throws {
        guard !counts.isEmpty else { return }
        try add(to: .rollups, on: connection)
        // The same counters by day alone, for queries grouped by day or week and nothing else.
        var days: [RollupKey: Int64] = [:]
        for (key, count) in counts {
            var daily = key
            daily.platform = ""
            daily.osMajor = 0
            daily.appVersion = ""
            days[daily, default: 0] += count
        }
        let dayRows = Self.sorted(days)
        for chunk in dayRows.chunks(of: 5000) {
            try connection.query(
                """
                INSERT INTO analytics_days (app_id, day, metric, key, count)
                SELECT a::uuid, d::date, m, k, c
                FROM unnest(\(PostgresArray(chunk.map { $0.key.appID.lowercasedText })), \(PostgresArray(chunk.map { $0.key.day })),
                            \(PostgresArray(chunk.map { $0.key.metric })), \(PostgresArray(chunk.map { $0.key.key })),
                            \(PostgresArray(chunk.map { $0.value })))
                    WITH ORDINALITY AS r(a, d, m, k, c, n)
                ORDER BY n
                ON CONFLICT (app_id, metric, day, key) DO UPDATE SET count = analytics_days.count + excluded.count
                """)
        }
        // The same counters without the day, for queries over all time.
        var totals: [RollupKey: Int64] = [:]
        for (key, count) in counts {
            var total = key
            total.day = ""
            totals[total, default: 0] += count
        }
        let totalRows = Self.sorted(totals)
        for chunk in totalRows.chunks(of: 5000) {
            try connection.query(
                """
                INSERT INTO analytics_totals (app_id, platform, os_major, app_version, metric, key, count)
                SELECT a::uuid, p, o, v, m, k, c
                FROM unnest(\(PostgresArray(chunk.map { $0.key.appID.lowercasedText })), \(PostgresArray(chunk.map { $0.key.platform })),
                            \(PostgresArray(chunk.map { Int64($0.key.osMajor) })), \(PostgresArray(chunk.map { $0.key.appVersion })),
                            \(PostgresArray(chunk.map { $0.key.metric })), \(PostgresArray(chunk.map { $0.key.key })),
                            \(PostgresArray(chunk.map { $0.value })))
                    WITH ORDINALITY AS r(a, p, o, v, m, k, c, n)
                ORDER BY n
                ON CONFLICT (app_id, metric, platform, os_major, app_version, key)
                DO UPDATE SET count = analytics_totals.count + excluded.count
                """)
        }
    }
}

/// A table of counters by day, platform, OS major and app version (the rollups' shape): the
/// live rollups, the counters an erasure kept of the events it erased, or those an archive or a
/// retention batch kept of the events it took out of the log. The last two lead with their
/// owner's id.
enum RollupTable {
    case rollups
    case erasure(UUID)
    case archive(Int64)

    var name: String {
        switch self {
        case .rollups: "analytics_rollups"
        case .erasure: "erasure_rollups"
        case .archive: "archived_rollups"
        }
    }

    /// The owner's column and id, for the tables that have one.
    var owner: (column: String, id: PostgresBind)? {
        switch self {
        case .rollups: return nil
        case .erasure(let id): return (column: "erasure_id", id: id.postgresBind)
        case .archive(let id): return (column: "archive_id", id: id.postgresBind)
        }
    }
}

extension RollupCounts {
    /// Adds the counters to `table`, a counter already there added to: in key order (so
    /// concurrent writers lock rows in the same order), 5,000 a statement. The one statement
    /// that writes counters of this shape, whichever table they go to.
    func add(to table: RollupTable, on connection: PostgresConnection) throws {
        guard !counts.isEmpty else { return }
        let owner = table.owner
        let ownerColumn = owner.map { "\($0.column), " } ?? ""
        // The owner's id is the ninth parameter, after the eight arrays.
        let ownerValue = owner.map { _ in "$9, " } ?? ""
        let sql = """
            INSERT INTO \(table.name) (\(ownerColumn)app_id, day, platform, os_major, app_version, metric, key, count)
            SELECT \(ownerValue)a::uuid, d::date, p, o, v, m, k, c
            FROM unnest($1, $2, $3, $4, $5, $6, $7, $8) WITH ORDINALITY AS r(a, d, p, o, v, m, k, c, n)
            ORDER BY n
            ON CONFLICT (\(ownerColumn)app_id, metric, day, platform, os_major, app_version, key)
            DO UPDATE SET count = \(table.name).count + excluded.count
            """
        for chunk in Self.sorted(counts).chunks(of: 5000) {
            let arrays = [
                PostgresArray(chunk.map { $0.key.appID.lowercasedText }), PostgresArray(chunk.map { $0.key.day }),
                PostgresArray(chunk.map { $0.key.platform }), PostgresArray(chunk.map { Int64($0.key.osMajor) }),
                PostgresArray(chunk.map { $0.key.appVersion }), PostgresArray(chunk.map { $0.key.metric }),
                PostgresArray(chunk.map { $0.key.key }), PostgresArray(chunk.map { $0.value }),
            ]
            try connection.query(PostgresQuery(unsafeSQL: sql, binds: arrays.map(\.postgresBind) + (owner.map { [$0.id] } ?? [])))
        }
    }
}

/// Keeps `analytics_rollups`, `analytics_days` and `analytics_totals` up to date: reads the
/// log after its checkpoint, in global order, and adds each event's counters (from the outcome
/// stored with it), saving the checkpoint in the same transaction under an advisory lock, so
/// that every event is counted exactly once, however many servers run it. A background service
/// of every server (`GateService.backgroundServices`), off the append path: appends never wait
/// on a hot counter row, and an analytics request catches it up first.
public final class AnalyticsRollup: Service, Sendable {
    public static let checkpointName = "analytics"
    /// The advisory lock rollup writers (and the replay) take turns on.
    public static let lockKey = Int64(0x726f_6c6c_7570)

    let pool: PostgresConnectionPool
    let logger: Logger

    public init(pool: PostgresConnectionPool, logger: Logger) {
        self.pool = pool
        self.logger = logger
    }

    /// Counts everything readable now; returns the events counted.
    ///
    /// With `waitForInFlightCommits`, it first waits (up to `patience`) until every transaction
    /// running at the call has finished, so that every append acknowledged before the call is
    /// readable in global order and counted: analytics read their writes. `patience` also
    /// bounds how long it keeps trying for the rollup's lock before answering with what is
    /// counted: two seconds for a request, longer for `verify`, which must count everything.
    @discardableResult
    public func catchUp(pageSize: Int = 5000, waitForInFlightCommits: Bool = false, patience: Duration = .seconds(2)) async throws -> Int {
        if waitForInFlightCommits {
            try await self.waitForInFlightCommits(patience: patience)
        }
        var total = 0
        // The lock is tried, never waited for on a pooled connection: a `replay` holds it for
        // minutes, and waiting inside the pool would park every connection behind it. Another
        // holder (a second server's rollup, a replay) is counting the same events anyway.
        let deadline = ContinuousClock.now + patience
        var backoff = PollBackoff(first: .milliseconds(10))
        while true {
            let counted = try await pool.transaction { connection in
                try Self.countPage(pageSize: pageSize, on: connection)
            }
            guard let counted else {
                guard ContinuousClock.now < deadline else { return total }
                try await Task.sleep(for: backoff.next() ?? .milliseconds(100))
                continue
            }
            total += counted
            if counted < pageSize { return total }
        }
    }

    /// Waits, for at most `patience`, until every writing transaction older than the newest
    /// one committed at the call has ended (PostgreSQL's, in any database of the cluster: the
    /// global order's horizon is the cluster's oldest running transaction that has written), so
    /// that every append acknowledged before the call is readable in global order; returns
    /// whether they all had.
    @discardableResult
    public func waitForInFlightCommits(patience: Duration) async throws -> Bool {
        let target = try await pool.query("SELECT pg_snapshot_xmax(pg_current_snapshot())::text").first?.decode(0, as: String.self) ?? "0"
        let deadline = ContinuousClock.now + patience
        var backoff = PollBackoff()
        while true {
            let passed = try await pool.query(
                "SELECT pg_snapshot_xmin(pg_current_snapshot()) >= \(target)::xid8").first?.decode(0, as: Bool.self) ?? true
            if passed { return true }
            guard ContinuousClock.now < deadline else { return false }
            try await Task.sleep(for: backoff.next() ?? .milliseconds(100))
        }
    }

    /// Counts one page; nil when another holder has the lock (unless `locked`, when the caller
    /// already holds it).
    static func countPage(pageSize: Int, locked: Bool = false, on connection: PostgresConnection) throws -> Int? {
        if !locked {
            let acquired = try connection.query("SELECT pg_try_advisory_xact_lock(\(lockKey))").first?.decode(0, as: Bool.self) ?? false
            guard acquired else { return nil }
        }
        let checkpoint = try Self.checkpoint(on: connection)
        let rows = try EventLog.read(Self.countedColumns, after: checkpoint, limit: pageSize, on: connection)
        guard let lastRow = rows.last else { return 0 }
        var counts = RollupCounts()
        for row in rows {
            guard let text = try row.decodeIfPresent(5, as: String.self), let outcome = try? JSONText.outcome(text) else { continue }
            counts.add(
                appID: try row.decode(2), occurredAt: try row.decode(3), type: try row.decode(4),
                choice: try row.decodeIfPresent(6, as: String.self).flatMap(PromptChoice.init(rawValue:)), outcome: outcome)
        }
        try counts.upsert(on: connection)
        try saveCheckpoint(try EventLog.position(of: lastRow), on: connection)
        return rows.count
    }

    /// What the rollup reads of each event: its place, and only for an event whose outcome
    /// carries analytics (one that counts for something; most observations do not) the outcome
    /// and a prompt's answer. Reading every event's columns back was a twentieth of
    /// PostgreSQL's work per ingested event.
    static let countedColumns = """
        tx_id::text, position, app_id, occurred_at, type,
        CASE WHEN outcome ? 'analytics' THEN outcome::text END,
        CASE WHEN type = 'promptResponded' AND outcome ? 'analytics' THEN data->>'choice' END
        """

    static func checkpoint(on connection: PostgresConnection) throws -> LogPosition {
        try EventLog.checkpoint(named: checkpointName, on: connection)
    }

    static func saveCheckpoint(_ position: LogPosition, on connection: PostgresConnection) throws {
        try EventLog.saveCheckpoint(position, named: checkpointName, on: connection)
    }

    public func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do {
                    try await self.catchUp()
                } catch where Task.isCancelled {
                    break  // shutting down
                } catch {
                    self.logger.warning("analytics rollup failed; retrying", metadata: ["error": "\(String(reflecting: error))"])
                }
                try? await Task.sleep(for: .milliseconds(500))
            }
        }
    }
}
