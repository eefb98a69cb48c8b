import Foundation
import Logging
import PostgresClient

/// The append-only event log on PostgreSQL (SPEC §1).
///
/// - Streams are `(app, user, device)` with versions 1..n and no gaps: an append takes a
///   transaction-level advisory lock per stream (`lock(_:on:)`, in sorted order, before its
///   first write), so concurrent writers of a stream take turns; `streams` holds each
///   stream's head, read under that lock.
/// - A batch is atomic: one transaction, all or nothing.
/// - Idempotency is checked once the batch's streams are locked, before anything is written:
///   an id the app already stored, in any partition, returns the stored result when the
///   event is the same (user, device, type, stored data, occurredAt), and is an
///   `idConflict` when it is not. Two retries that race take turns on the stream's lock, so
///   the second finds the first's event; one that still reaches the insert hits the
///   partition's unique index, and the append is run again and reads the stored result.
/// - The global order is `(tx_id, position)`, read only below the oldest running transaction,
///   so no reader ever skips an event that a slower transaction commits late.
public struct EventLog: Sendable {
    /// The channel every append notifies, after commit, for subscribers to wake up.
    public static let notificationChannel = "locgate_events"

    public let pool: PostgresConnectionPool
    let logger: Logger

    public init(pool: PostgresConnectionPool, logger: Logger) {
        self.pool = pool
        self.logger = logger
    }

    // MARK: - Append

    /// Appends a batch for one app, atomically and in order, and returns one result per event.
    /// `origin` marks the append's NOTIFY (see `appendInTransaction`).
    public func append(
        appID: UUID, events: [NewEvent], projector: (any AppendProjector)? = nil, origin: String? = nil
    ) async throws(EventLogError) -> [AppendResult] {
        do {
            return try await pool.withConnection { connection in
                try Self.append(appID: appID, events: events, projector: projector, origin: origin, on: connection)
            }
        } catch let error as EventLogError {
            throw error
        } catch {
            throw EventLogError.database(error)
        }
    }

    /// The blocking append, for callers that already hold a connection. Runs the transaction
    /// again, at most twice, when another writer stored a row its reads found absent first
    /// (`isAppendRace`: the caller then sees the stored result) or when no partition took the
    /// events yet (after creating the partitions ahead).
    public static func append(
        appID: UUID, events: [NewEvent], projector: (any AppendProjector)?, origin: String? = nil, on connection: PostgresConnection
    ) throws -> [AppendResult] {
        var attempt = 0
        while true {
            attempt += 1
            do {
                return try connection.transaction { connection in
                    try appendInTransaction(appID: appID, events: events, projector: projector, origin: origin, on: connection)
                }
            } catch let error as PostgresError where error.isAppendRace && attempt < 3 {
                continue
            } catch let error as PostgresError where error.isMissingPartition && attempt < 3 {
                _ = try ensurePartitions(on: connection)
                continue
            }
        }
    }

    /// The append inside a transaction the caller runs (and commits): for group commit, where
    /// several appends share one transaction. `streamsLocked` says the caller already took
    /// every stream's lock with `lock(_:on:)` before the transaction's first write. `origin`, when
    /// given, starts every payload of the append's NOTIFY (`StreamChange.originLine`): the
    /// appending process, which has its new states already, skips its own notifications.
    public static func appendInTransaction(
        appID: UUID, events: [NewEvent], projector: (any AppendProjector)?, streamsLocked: Bool = false, origin: String? = nil,
        on connection: PostgresConnection
    ) throws -> [AppendResult] {
        guard !events.isEmpty else { return [] }
        // 1. Lock every stream of the batch first, in one sorted order, before any write (see
        //    `lock(_:on:)`), and before the idempotency lookup: the log is partitioned, each
        //    partition's unique index covers its own rows only, and a concurrent retry of the
        //    same event may be committing into another partition. Under the lock, the lookup
        //    (a statement of its own, with a fresh snapshot) sees it.
        if !streamsLocked {
            try lock(events.map { StreamKey(appID: appID, userID: $0.userID, deviceID: $0.deviceID) }, on: connection)
        }
        // 2. One round trip of reads: the idempotency probe (ids already stored, in any
        //    partition, are answered from the log), the streams' versions (stable under the
        //    locks) and the projector's read, for every stream of the batch (also one whose
        //    events all turn out to be stored already).
        var seen: Set<StreamKey> = []
        let streams = events.map { StreamKey(appID: appID, userID: $0.userID, deviceID: $0.deviceID) }.filter { seen.insert($0).inserted }
        let projectorRead = projector?.read(streams)
        let answers = try connection.query(
            [idempotencyProbe(appID: appID, ids: events.map(\.id)), streamVersionsQuery(appID: appID, keys: streams)]
                + (projectorRead.map { [$0] } ?? []))
        let stored = answers[0]
        var duplicates: [UUID: AppendResult] = [:]
        for row in stored {
            let id: UUID = try row.decode(0)
            duplicates[id] = AppendResult(
                id: id, userID: try row.decode(1), deviceID: try row.decode(2), version: try row.decode(3),
                outcome: try row.decodeIfPresent(4), duplicate: true)
        }
        // 2b. An id stored with other content is a conflict, not a duplicate (SPEC §14). Only
        //     ids found stored are compared, in a statement of their own: an append of new
        //     events (nearly all of them) pays nothing for it.
        if !duplicates.isEmpty,
           let conflict = try firstIDConflict(appID: appID, events: events, stored: duplicates, on: connection) {
            throw EventLogError.idConflict(index: conflict.index, id: events[conflict.index].id, field: conflict.field)
        }
        // 3. Group the new events by stream, in batch order.
        var order: [StreamKey] = []
        var byStream: [StreamKey: [(index: Int, event: NewEvent)]] = [:]
        for (index, event) in events.enumerated() where duplicates[event.id] == nil {
            let key = StreamKey(appID: appID, userID: event.userID, deviceID: event.deviceID)
            if byStream[key] == nil { order.append(key) }
            byStream[key, default: []].append((index, event))
        }
        guard !order.isEmpty else { return events.compactMap { duplicates[$0.id] } }
        // 4. The streams' versions, read above.
        let versions = try streamVersions(appID: appID, rows: answers[1])
        // 5. Versions and expectedVersion checks.
        var appends: [StreamAppend] = []
        for key in order {
            let previous = versions[key] ?? 0
            var version = previous
            var planned: [(index: Int, version: Int64, event: NewEvent)] = []
            for (index, event) in byStream[key] ?? [] {
                if let expected = event.expectedVersion, expected != version {
                    throw EventLogError.versionConflict(index: index, stream: key, expected: expected, actual: version)
                }
                version += 1
                planned.append((index, version, event))
            }
            appends.append(StreamAppend(stream: key, previousVersion: previous, events: planned))
        }
        // 6. Move the stream heads, and in the same statement tell listeners which streams
        //    moved; NOTIFY is delivered at commit, never for a rolled-back batch. Payloads stay
        //    under PostgreSQL's 8000-byte limit. Nothing here waits for the projection: these
        //    statements go to the server now (`flush`), and it runs them while the projection
        //    runs here.
        let heads = appends.map { ($0.stream, $0.events.last?.version ?? $0.previousVersion) }
        let payloads = StreamChange.payloads(heads.map { StreamChange(stream: $0.0, version: $0.1) }, origin: origin)
        // A stream with no head yet (read under its lock, and only appends write heads) gets a
        // plain INSERT: PostgreSQL spends about half as much on it as on an upsert's
        // speculative insertion. The heads that move are upserted.
        let fresh = heads.indices.filter { appends[$0].previousVersion == 0 }.map { heads[$0] }
        let moving = heads.indices.filter { appends[$0].previousVersion != 0 }.map { heads[$0] }
        if !fresh.isEmpty && !moving.isEmpty {
            try connection.send(
                """
                INSERT INTO streams (app_id, user_id, device_id, version)
                SELECT \(appID), u, d, v
                FROM unnest(\(PostgresArray(fresh.map { $0.0.userID })), \(PostgresArray(fresh.map { $0.0.deviceID })),
                            \(PostgresArray(fresh.map { $0.1 }))) AS heads(u, d, v)
                """)
        }
        // The statement that notifies writes the moving heads, or the new ones when none moves.
        let written = moving.isEmpty ? fresh : moving
        let conflict = moving.isEmpty ? "" : "ON CONFLICT (app_id, user_id, device_id) DO UPDATE SET version = excluded.version"
        try connection.send(
            """
            WITH moved AS (
                INSERT INTO streams (app_id, user_id, device_id, version)
                SELECT \(appID), u, d, v
                FROM unnest(\(PostgresArray(written.map { $0.0.userID })), \(PostgresArray(written.map { $0.0.deviceID })),
                            \(PostgresArray(written.map { $0.1 }))) AS heads(u, d, v)
                \(unescaped: conflict)
                RETURNING 1)
            SELECT (SELECT count(*) FROM moved),
                   (SELECT count(pg_notify(\(notificationChannel), p)) FROM unnest(\(PostgresArray(payloads))) AS p)
            """)
        try connection.flush()
        // 7. The projection, in the same transaction. Outcomes and versions by batch index are
        //    arrays: no hashing per event.
        var outcomes = [String?](repeating: nil, count: events.count)
        if let projector {
            let projected = try projector.project(appends, read: projectorRead == nil ? nil : answers[2], on: connection)
            for (append, streamOutcomes) in zip(appends, projected) {
                for (planned, outcome) in zip(append.events, streamOutcomes) {
                    outcomes[planned.index] = outcome
                }
            }
        }
        // 8. Insert every event in one statement. It is queued (`send`), as the projection's
        //    writes are: they reach the server with COMMIT, whose answer ends the pipeline the
        //    flush began. (Flushing the projection's writes too, or the locks before the reads,
        //    was measured: each flush wakes the server once more, and neither paid.)
        let planned = appends.flatMap(\.events).sorted { $0.index < $1.index }
        try connection.send(
            """
            INSERT INTO events (app_id, user_id, device_id, version, event_id, type, data, occurred_at, outcome)
            SELECT \(appID), u, d, v, i, t, j, o, r
            FROM unnest(\(PostgresArray(planned.map { $0.event.userID })), \(PostgresArray(planned.map { $0.event.deviceID })),
                        \(PostgresArray(planned.map { $0.version })), \(PostgresArray(planned.map { $0.event.id })),
                        \(PostgresArray(planned.map { $0.event.type })), \(PostgresArray(json: planned.map { $0.event.data })),
                        \(PostgresArray(planned.map { $0.event.occurredAt })), \(PostgresArray(json: planned.map { outcomes[$0.index] })))
                AS batch(u, d, v, i, t, j, o, r)
            """)
        var results: [AppendResult] = []
        results.reserveCapacity(events.count)
        var plannedByIndex = [Int64](repeating: 0, count: events.count)
        for item in planned { plannedByIndex[item.index] = item.version }
        for (index, event) in events.enumerated() {
            if let duplicate = duplicates[event.id] {
                results.append(duplicate)
            } else {
                results.append(AppendResult(
                    id: event.id, userID: event.userID, deviceID: event.deviceID,
                    version: plannedByIndex[index], outcome: outcomes[index], duplicate: false))
            }
        }
        return results
    }

    /// The first event of the batch (by index) whose id is stored with other content, and the
    /// first field that differs, in the order `userId`, `deviceId`, `type`, `data`,
    /// `occurredAt`; nil when every stored id holds the same event. PostgreSQL compares: `data`
    /// as `jsonb` (the stored form against the stored form of the submission) and `occurredAt`
    /// as an instant, each bound exactly as the insert binds it.
    static func firstIDConflict(
        appID: UUID, events: [NewEvent], stored: [UUID: AppendResult], on connection: PostgresConnection
    ) throws -> (index: Int, field: String)? {
        let found = events.indices.filter { stored[events[$0].id] != nil }
        guard !found.isEmpty else { return nil }
        let rows = try connection.query(
            """
            SELECT i.n, CASE WHEN e.user_id <> i.u THEN 'userId' WHEN e.device_id <> i.d THEN 'deviceId'
                             WHEN e.type <> i.t THEN 'type' WHEN e.data <> i.j THEN 'data' ELSE 'occurredAt' END
            FROM unnest(\(PostgresArray(found.map { Int64($0) })), \(PostgresArray(found.map { events[$0].id })),
                        \(PostgresArray(found.map { events[$0].userID })), \(PostgresArray(found.map { events[$0].deviceID })),
                        \(PostgresArray(found.map { events[$0].type })), \(PostgresArray(json: found.map { events[$0].data })),
                        \(PostgresArray(found.map { events[$0].occurredAt }))) AS i(n, id, u, d, t, j, o)
            CROSS JOIN LATERAL (
                SELECT user_id, device_id, type, data, occurred_at FROM events
                WHERE app_id = (SELECT \(appID)) AND event_id = i.id OFFSET 0) AS e
            WHERE e.user_id <> i.u OR e.device_id <> i.d OR e.type <> i.t OR e.data <> i.j OR e.occurred_at <> i.o
            ORDER BY i.n LIMIT 1
            """)
        guard let row = rows.first else { return nil }
        let index: Int64 = try row.decode(0)
        let field: String = try row.decode(1)
        // `n` is one of `found`, so an index of `events`.
        guard let position = Int(exactly: index), events.indices.contains(position) else { return nil }
        return (position, field)
    }

    /// The idempotency probe: the stored events of the app with these ids. Every lookup of the
    /// append is a LATERAL probe of a unique index, one per key. The statistics of a new app
    /// (not sampled yet: estimated at one row) lead the planner astray twice, and the statement
    /// is written against both. `OFFSET 0` keeps it from flattening the subquery into a join
    /// (it chose a hash join over the app's whole log, 130 ms per 1,000-event append at 120k
    /// events and growing). The app id comes as a sub-select, a value the planner does not
    /// see: with the literal, the app's other index, `(app_id, tx_id, position)`, looked as
    /// cheap as the unique one for "one row", and the probe filtered every event of the app
    /// for each id (0.8 to 48 s for a 1,000-event append at 122,616 events of the app, against
    /// 13 ms through the unique index). A key is unique in each partition; one stored in two
    /// would come back twice and is kept once.
    static func idempotencyProbe(appID: UUID, ids: [UUID]) -> PostgresQuery {
        """
        SELECT e.event_id, e.user_id, e.device_id, e.version, e.outcome
        FROM unnest(\(PostgresArray(ids))) AS i(id)
        CROSS JOIN LATERAL (
            SELECT event_id, user_id, device_id, version, outcome FROM events
            WHERE app_id = (SELECT \(appID)) AND event_id = i.id OFFSET 0) AS e
        """
    }

    /// The streams' versions, read under their locks (`lock(_:on:)`), which keep them stable
    /// until commit. A stream without a row is at version 0; the append's upsert of the heads
    /// creates it.
    static func streamVersionsQuery(appID: UUID, keys: [StreamKey]) -> PostgresQuery {
        """
        SELECT s.user_id, s.device_id, s.version
        FROM unnest(\(PostgresArray(keys.map(\.userID))), \(PostgresArray(keys.map(\.deviceID)))) AS k(u, d)
        CROSS JOIN LATERAL (
            SELECT user_id, device_id, version FROM streams
            WHERE app_id = \(appID) AND user_id = k.u AND device_id = k.d OFFSET 0) AS s
        """
    }

    static func streamVersions(appID: UUID, rows: PostgresRows) throws -> [StreamKey: Int64] {
        var versions: [StreamKey: Int64] = [:]
        versions.reserveCapacity(rows.count)
        for row in rows {
            versions[StreamKey(appID: appID, userID: try row.decode(0), deviceID: try row.decode(1))] = try row.decode(2)
        }
        return versions
    }

    /// Takes the streams' append locks: transaction-level advisory locks on a 64-bit hash of
    /// each stream, in ascending order (so two batches never deadlock), before the transaction
    /// writes anything. That order matters: a transaction gets its id at its first write, so a
    /// writer that waits for a stream gets a larger id than the one it waited for, and the
    /// global order `(tx_id, position)` agrees with every stream's version order. (A row lock
    /// such as SELECT ... FOR UPDATE would assign the id before waiting and break that.)
    ///
    /// A caller that runs several appends in one transaction (group commit) locks every stream
    /// they write before the first of them writes, and passes `streamsLocked`.
    ///
    /// Before the streams' locks, each person's lock is taken shared (`userLockKey`): an erasure
    /// takes it exclusively, so an append racing an erasure is either wholly before it (and
    /// erased) or wholly after it (and kept), never half.
    public static func lock(_ streams: [StreamKey], on connection: PostgresConnection) throws {
        let userKeys = Set(streams.map(\.userLockKey)).sorted()
        let lockKeys = Set(streams.map(\.lockKey)).sorted()
        // Queued: it goes with the next statement (the idempotency lookup), in order, before it.
        try connection.send(
            """
            SELECT (SELECT count(pg_advisory_xact_lock_shared(u)) FROM unnest(\(PostgresArray(userKeys))) WITH ORDINALITY AS p(u, n)),
                   (SELECT count(pg_advisory_xact_lock(k)) FROM unnest(\(PostgresArray(lockKeys))) WITH ORDINALITY AS t(k, n))
            """)
    }

    /// A person's lock: FNV-1a over app and user, apart from the streams' keys (a last byte of
    /// 1). Appends hold it shared; an erasure holds it exclusively.
    public static func userLockKey(appID: UUID, userID: String) -> Int64 {
        Int64(bitPattern: FNV1a.hash(appID.uppercasedText.utf8.lazy + [0] + userID.utf8 + [1]))
    }

    // MARK: - Read

    /// A stream's events after `afterVersion`, in version order (the app by a sub-select, as
    /// in the idempotency probe).
    public func readStream(_ stream: StreamKey, afterVersion: Int64 = 0, limit: Int = 1000) async throws -> [RecordedEvent] {
        try await pool.withConnection { connection in
            try Self.decode(connection.query(
                """
                SELECT \(unescaped: Self.columns) FROM events
                WHERE app_id = (SELECT \(stream.appID)) AND user_id = \(stream.userID) AND device_id = \(stream.deviceID)
                  AND version > \(afterVersion)
                ORDER BY version LIMIT \(limit)
                """))
        }
    }

    /// The current version of a stream; 0 when it has no events.
    public func version(of stream: StreamKey) async throws -> Int64 {
        try await pool.withConnection { connection in
            let rows = try connection.query(
                """
                SELECT version FROM streams
                WHERE app_id = \(stream.appID) AND user_id = \(stream.userID) AND device_id = \(stream.deviceID)
                """)
            return try rows.first?.decode(0) ?? 0
        }
    }

    /// The next events of the global log after `position`, at most `limit`. Only transactions
    /// older than every running one are read, so an event that a slower transaction commits
    /// later always sorts after what this returns.
    public func read(after position: LogPosition, limit: Int = 1000) async throws -> [RecordedEvent] {
        try await pool.withConnection { connection in
            try Self.read(after: position, limit: limit, on: connection)
        }
    }

    /// With `outcomes` false the stored outcomes are not read (`outcome` is nil): a replay
    /// computes them again, and they are the largest column.
    public static func read(
        after position: LogPosition, limit: Int, outcomes: Bool = true, on connection: PostgresConnection
    ) throws -> [RecordedEvent] {
        try decode(read(outcomes ? columns : columnsWithoutOutcome, after: position, limit: limit, on: connection))
    }

    /// The same events as `read(after:limit:outcomes:on:)`, with `select` as the select list
    /// (its first two columns must be `tx_id::text` and `position`, which `position(of:)` reads):
    /// for readers of many events that need few of their columns (the analytics rollup).
    public static func read(_ select: String, after position: LogPosition, limit: Int, on connection: PostgresConnection) throws -> PostgresRows {
        try connection.query(
            """
            SELECT \(unescaped: select) FROM events
            WHERE (tx_id, position) > (\(String(position.transactionID))::xid8, \(position.position))
              AND tx_id < pg_snapshot_xmin(pg_current_snapshot())
            ORDER BY events.tx_id, events.position
            LIMIT \(limit)
            """)
    }

    /// The place of a row that `read(_:after:limit:on:)` returned.
    public static func position(of row: PostgresRow) throws -> LogPosition {
        LogPosition(transactionID: try row.decode(0), position: try row.decode(1))
    }

    /// The select list of `RecordedEvent`. `tx_id::text` is named `tx_id` in the output, which
    /// ORDER BY would prefer over the column (sorting "1000" before "998"): order by
    /// `events.tx_id`, never by the bare name.
    static let columns = columnsBeforeOutcome + ", outcome::text"
    /// The same list with a NULL in the outcome's place, for readers that do not need it.
    static let columnsWithoutOutcome = columnsBeforeOutcome + ", NULL::text"
    private static let columnsBeforeOutcome =
        "tx_id::text, position, app_id, user_id, device_id, version, event_id, type, data::text, occurred_at, recorded_at"

    static func decode(_ rows: PostgresRows) throws -> [RecordedEvent] {
        try rows.map { row in
            RecordedEvent(
                logPosition: try position(of: row),
                stream: StreamKey(appID: try row.decode(2), userID: try row.decode(3), deviceID: try row.decode(4)),
                version: try row.decode(5), id: try row.decode(6), type: try row.decode(7), data: try row.decode(8),
                occurredAt: try row.decode(9), recordedAt: try row.decode(10), outcome: try row.decodeIfPresent(11))
        }
    }

    // MARK: - Checkpoints

    /// Where the named subscriber has read up to; `.start` when it never saved one.
    public func checkpoint(named name: String) async throws -> LogPosition {
        try await pool.withConnection { connection in try Self.checkpoint(named: name, on: connection) }
    }

    /// Saves the named subscriber's position.
    public func saveCheckpoint(_ position: LogPosition, named name: String) async throws {
        try await pool.withConnection { connection in try Self.saveCheckpoint(position, named: name, on: connection) }
    }

    /// The checkpoint on a connection the caller holds, for a subscriber that saves it in the
    /// transaction that processed the events (exactly-once).
    public static func checkpoint(named name: String, on connection: PostgresConnection) throws -> LogPosition {
        let rows = try connection.query(
            "SELECT tx_id::text, position FROM subscription_checkpoints WHERE name = \(name)")
        guard let row = rows.first else { return .start }
        return LogPosition(transactionID: try row.decode(0), position: try row.decode(1))
    }

    public static func saveCheckpoint(_ position: LogPosition, named name: String, on connection: PostgresConnection) throws {
        try connection.query(
            """
            INSERT INTO subscription_checkpoints (name, tx_id, position)
            VALUES (\(name), \(String(position.transactionID))::xid8, \(position.position))
            ON CONFLICT (name) DO UPDATE SET tx_id = excluded.tx_id, position = excluded.position, updated_at = now()
            """)
    }

    // MARK: - Subscribe

    /// Follows the log from `position`: catches up in pages, then waits for NOTIFY, polling
    /// every `pollInterval` as a fallback (a notification can be lost with its connection, and
    /// an unrelated long transaction can hold the readable horizon back).
    /// With `listen` false it only polls: for tests of the fallback, and for servers where
    /// LISTEN is not allowed (some poolers).
    public func subscribe(
        from position: LogPosition, batchSize: Int = 500, pollInterval: Duration = .milliseconds(500), listen: Bool = true
    ) -> EventSubscription {
        EventSubscription(
            log: self, start: position, batchSize: batchSize, pollInterval: pollInterval, listen: listen, logger: logger)
    }
}
