import EventLog
import Foundation
import LocationAuthorization
import Logging
import Metrics
import PostgresClient
import ServiceLifecycle

/// An erasure as `GET /v1/erasures/{id}` shows it (SPEC §13): no user or device id.
public struct ErasureRecord: Sendable, Hashable, Encodable {
    public var id: UUID
    public var status: String
    public var requestedAt: String
    /// Null while pending (written, not left out).
    public var completedAt: String?
    public var events: Int64
    public var devices: Int64

    /// The record's JSON: the id in lower case, `completedAt` null while pending.
    public func encode(to encoder: any Encoder) throws {
        enum Keys: String, CodingKey { case id, status, requestedAt, completedAt, events, devices }
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(id.lowercasedText, forKey: .id)
        try container.encode(status, forKey: .status)
        try container.encode(requestedAt, forKey: .requestedAt)
        try container.encode(completedAt, forKey: .completedAt)
        try container.encode(events, forKey: .events)
        try container.encode(devices, forKey: .devices)
    }
}

/// Erasure (SPEC §13) in two phases.
///
/// 1. **The database forgets.** In one transaction under the person's lock (so an append racing
///    it is wholly before or wholly after): the analytics counters of the person's events are
///    kept in `erasure_rollups` (and those the rollup had not counted yet are counted now), the
///    maintained device counts drop the person's devices, and `locgate_erase_user` deletes the
///    events, streams, device states and snapshots. The erasure's work row keeps the device ids
///    until phase 2, and a NOTIFY on `locgate_erasures` names the erasure (not the person).
/// 2. **Every process forgets.** Each server's cache follower drops the devices from its cache,
///    wakes the push streams of that person, and acknowledges; the erasure is `done` once every
///    live server process has acknowledged it or emptied its caches since (a resync), and the
///    work row, with the last copy of the ids, is deleted.
///
/// Phase 1 runs in whichever process picks the work up (`ErasureWorker`, or `locgate erase`);
/// a crash between the request and phase 1, or in it, leaves the work row for the next attempt,
/// so an acknowledged erasure is never undone.
extension GateService {
    public static let erasureChannel = "locgate_erasures"

    /// `DELETE /v1/users/{u}`: records the erasure and its work, then answers at once (202).
    /// An unknown user gets the same answer; phase 1 finds nothing and the record says 0.
    public func requestErasure(appID: UUID, userID: String) async throws(ServiceError) -> ErasureRecord {
        let id = UUID()
        let record = try await database {
            try await pool.transaction { connection in
                try connection.query("INSERT INTO erasures (id, app_id, status) VALUES (\(id), \(appID), 'pending')")
                try connection.query("INSERT INTO erasure_work (erasure_id, app_id, user_id) VALUES (\(id), \(appID), \(userID))")
                try connection.query("SELECT pg_notify(\(Self.erasureChannel), \("work"))")
                return try Self.erasureRecord(appID: appID, id: id, on: connection) ?? ErasureRecord(
                    id: id, status: "pending", requestedAt: RFC3339.string(from: Date()), completedAt: nil, events: 0, devices: 0)
            }
        }
        // After the commit: the worker wakes at once and must find the work row.
        erasureSignal.raise()
        return record
    }

    /// `GET /v1/erasures/{id}`: the record, or nil when this app has none with that id.
    public func erasure(appID: UUID, id: UUID) async throws(ServiceError) -> ErasureRecord? {
        try await database {
            try await pool.withConnection { connection in try Self.erasureRecord(appID: appID, id: id, on: connection) }
        }
    }

    static func erasureRecord(appID: UUID, id: UUID, on connection: PostgresConnection) throws -> ErasureRecord? {
        try connection.query(
            """
            SELECT id, status, requested_at, completed_at, events, devices FROM erasures
            WHERE id = \(id) AND app_id = \(appID)
            """
        ).first.map { row in
            ErasureRecord(
                id: try row.decode(0), status: try row.decode(1), requestedAt: RFC3339.string(from: try row.decode(2)),
                completedAt: try row.decodeIfPresent(3, as: Date.self).map(RFC3339.string(from:)),
                events: try row.decode(4), devices: try row.decode(5))
        }
    }

    /// Phase 1 of the oldest erasure not yet performed; false when there is none.
    @discardableResult
    public func performNextErasure() async throws -> Bool {
        let performed: (UUID, [StreamKey])? = try await pool.transaction { connection in
            // Not while `locgate archive` exports: it may have read the person's events into
            // its file and its counters already. The erasure waits for it (docs/privacy.md).
            guard try connection.query("SELECT pg_try_advisory_xact_lock_shared(\(EventArchive.runLockKey))")
                .first?.decode(0, as: Bool.self) == true else { return nil }
            guard let row = try connection.query(
                """
                SELECT e.id, w.app_id, w.user_id FROM erasures e JOIN erasure_work w ON w.erasure_id = e.id
                WHERE e.status = 'pending' AND e.erased_at IS NULL
                ORDER BY e.requested_at LIMIT 1 FOR UPDATE OF e SKIP LOCKED
                """
            ).first else { return nil }
            let id: UUID = try row.decode(0)
            let appID: UUID = try row.decode(1)
            let userID: String = try row.decode(2)
            let devices = try Self.erase(id: id, appID: appID, userID: userID, on: connection)
            return (id, devices)
        }
        guard let (id, devices) = performed else { return false }
        // This process forgets at once (and says so); the others when the notification reaches them.
        forgetErased(devices)
        if followsChanges { try await acknowledge(id) }
        erasuresPerformed.increment()
        logger.info("erasure performed", metadata: ["erasure": "\(id)", "devices": "\(devices.count)"])
        return true
    }

    /// The database part of phase 1, in the caller's transaction.
    static func erase(id: UUID, appID: UUID, userID: String, on connection: PostgresConnection) throws -> [StreamKey] {
        // The rollup's lock first (it counts in global order; no count may move meanwhile),
        // then the person's: appends of this person finish or wait.
        try connection.query("SELECT pg_advisory_xact_lock(\(AnalyticsRollup.lockKey))")
        try EventLog.lockPerson(appID: appID, userID: userID, on: connection)
        let checkpoint = try AnalyticsRollup.checkpoint(on: connection)
        let events = try EventLog.events(ofUser: userID, appID: appID, on: connection)
        // Counters that name no one stay: every event's in `erasure_rollups` (a replay adds
        // them), and those the rollup has not reached yet are counted now, as it would have.
        var all = RollupCounts()
        var uncounted = RollupCounts()
        for event in events {
            guard let text = event.outcome, let outcome = try? JSONText.outcome(text) else { continue }
            all.add(appID: appID, occurredAt: event.occurredAt, type: event.type, data: event.data, outcome: outcome)
            if event.logPosition > checkpoint {
                uncounted.add(appID: appID, occurredAt: event.occurredAt, type: event.type, data: event.data, outcome: outcome)
            }
        }
        try uncounted.upsert(on: connection)
        try all.saveErased(erasure: id, on: connection)
        // Measures of the present no longer count the person's devices.
        try connection.query(
            """
            INSERT INTO device_counts (app_id, lane, state_id, status, platform, os_major, app_version, devices)
            SELECT app_id, (pg_backend_pid() % 16)::smallint, hashtextextended(state::text, 0), min(status), min(platform),
                   min(os_major), min(app_version), -count(*)
            FROM device_states WHERE app_id = \(appID) AND user_id = \(userID)
            GROUP BY app_id, hashtextextended(state::text, 0)
            ORDER BY 3
            ON CONFLICT (app_id, lane, state_id) DO UPDATE SET devices = device_counts.devices + excluded.devices
            """)
        let devices: [String] = try connection.query(
            "SELECT device_id FROM streams WHERE app_id = \(appID) AND user_id = \(userID) ORDER BY device_id"
        ).map { try $0.decode(0) }
        let counts: [Int64] = try connection.query("SELECT unnest(locgate_erase_user(\(appID), \(userID)))").map { try $0.decode(0) }
        try connection.query(
            """
            UPDATE erasures SET erased_at = now(), events = \(counts.first ?? 0), devices = \(counts.dropFirst().first ?? 0)
            WHERE id = \(id)
            """)
        try connection.query("UPDATE erasure_work SET device_ids = \(PostgresArray(devices)) WHERE erasure_id = \(id)")
        try connection.query("SELECT pg_notify(\(Self.erasureChannel), \(id.uuidString))")
        return devices.map { StreamKey(appID: appID, userID: userID, deviceID: $0) }
    }

    /// Drops erased devices from this process's cache and wakes their push streams.
    func forgetErased(_ devices: [StreamKey]) {
        let changes = devices.map { StreamChange(stream: $0, version: Int64.max) }
        for change in changes { cache.removeIfOlder(change.stream, than: change.version) }
        self.changes.publish(changes)
    }

    /// Phase 2 as the follower sees it: the erasure's devices forgotten here, then acknowledged.
    func acknowledgeErasure(_ id: UUID) async throws {
        let devices: [StreamKey] = try await pool.withConnection { connection in
            try connection.query(
                "SELECT w.app_id, w.user_id, d FROM erasure_work w, unnest(w.device_ids) AS d WHERE w.erasure_id = \(id)"
            ).map { row in StreamKey(appID: try row.decode(0), userID: try row.decode(1), deviceID: try row.decode(2)) }
        }
        forgetErased(devices)
        try await acknowledge(id)
    }

    /// Records that this process has forgotten the erasure (while it is still under way).
    func acknowledge(_ id: UUID) async throws {
        try await pool.query(
            """
            INSERT INTO erasure_acks (erasure_id, process_id)
            SELECT \(id), \(processID) WHERE EXISTS (SELECT 1 FROM erasure_work WHERE erasure_id = \(id))
            ON CONFLICT DO NOTHING
            """)
    }

    /// Marks `done` every performed erasure that each live server process has acknowledged, or
    /// has emptied its caches since; deletes its work row and acknowledgements.
    @discardableResult
    public func completeErasures() async throws -> Int {
        try await pool.transaction { connection in
            let done: [UUID] = try connection.query(
                """
                SELECT e.id FROM erasures e
                WHERE e.status = 'pending' AND e.erased_at IS NOT NULL
                  AND NOT EXISTS (
                      SELECT 1 FROM server_processes p
                      WHERE p.seen_at > now() - \(Self.processLiveness) * interval '1 millisecond'
                        AND p.resynced_at < e.erased_at
                        AND NOT EXISTS (SELECT 1 FROM erasure_acks a WHERE a.erasure_id = e.id AND a.process_id = p.id))
                FOR UPDATE OF e SKIP LOCKED
                """
            ).map { try $0.decode(0) }
            guard !done.isEmpty else { return 0 }
            try connection.query(
                "UPDATE erasures SET status = 'done', completed_at = now() WHERE id = ANY(\(PostgresArray(done)))")
            try connection.query("DELETE FROM erasure_acks WHERE erasure_id = ANY(\(PostgresArray(done)))")
            try connection.query("DELETE FROM erasure_work WHERE erasure_id = ANY(\(PostgresArray(done)))")
            return done.count
        }
    }

    /// A server process counts as live while it has been seen within this many milliseconds.
    static let processLiveness: Int64 = 3000

    /// Records that this server process is alive (and, with `resynced`, that it has just
    /// emptied its caches).
    func heartbeat(resynced: Bool = false) async throws {
        guard followsChanges else { return }
        try await pool.query(
            """
            INSERT INTO server_processes (id, seen_at, resynced_at) VALUES (\(processID), now(), now())
            ON CONFLICT (id) DO UPDATE SET seen_at = now(),
                resynced_at = CASE WHEN \(resynced) THEN now() ELSE server_processes.resynced_at END
            """)
    }

    /// Whether any erasure is still pending (performed or not): the worker keeps looking while
    /// one is.
    func erasuresUnderWay() async throws -> Bool {
        try await pool.query("SELECT EXISTS (SELECT 1 FROM erasures WHERE status = 'pending')").first?.decode(0, as: Bool.self) ?? false
    }

    /// Gathers statistics again, so that none keeps a sampled erased id.
    func analyzeAfterErasures() async throws {
        try await pool.query("SELECT locgate_analyze_after_erasure()")
    }
}

extension RollupCounts {
    /// The erased events' counters, under the erasure (no id of the person).
    func saveErased(erasure: UUID, on connection: PostgresConnection) throws {
        let rows = Self.sorted(counts)
        for chunk in rows.chunks(of: 5000) {
            try connection.query(
                """
                INSERT INTO erasure_rollups (erasure_id, app_id, day, platform, os_major, app_version, metric, key, count)
                SELECT \(erasure), a::uuid, d::date, p, o, v, m, k, c
                FROM unnest(\(PostgresArray(chunk.map { $0.key.appID.lowercasedText })), \(PostgresArray(chunk.map { $0.key.day })),
                            \(PostgresArray(chunk.map { $0.key.platform })), \(PostgresArray(chunk.map { Int64($0.key.osMajor) })),
                            \(PostgresArray(chunk.map { $0.key.appVersion })), \(PostgresArray(chunk.map { $0.key.metric })),
                            \(PostgresArray(chunk.map { $0.key.key })), \(PostgresArray(chunk.map { $0.value })))
                    AS r(a, d, p, o, v, m, k, c)
                """)
        }
    }
}

/// Every server's part of erasure: it records that the process is alive, performs the erasures
/// requested (phase 1, whichever process gets there first), and marks done those every live
/// process has acknowledged (phase 2); after erasures it gathers statistics again.
///
/// It looks for work as soon as it is woken (`ErasureSignal`: a request, a notification, a
/// resync), every `interval` while an erasure is under way, and otherwise only every
/// `idleCheck`: an idle server costs the database one heartbeat a second, not four queries.
public struct ErasureWorker: Service {
    let service: GateService
    let logger: Logger
    /// How often it looks for work while there is some; an erasure is done within a few of these.
    let interval: Duration
    /// How often an idle worker looks anyway (a notification lost with its connection).
    static let idleCheck: Duration = .seconds(5)
    /// How often it records that this process is alive (`server_processes`).
    static let heartbeat: Duration = .seconds(1)

    public init(service: GateService, logger: Logger, interval: Duration = .milliseconds(250)) {
        self.service = service
        self.logger = logger
        self.interval = interval
    }

    public func run() async throws {
        await cancelWhenGracefulShutdown {
            var lastHeartbeat = ContinuousClock.now - .seconds(10)
            var lastCheck = ContinuousClock.now - Self.idleCheck
            var underWay = true
            var first = true
            while !Task.isCancelled {
                do {
                    if ContinuousClock.now - lastHeartbeat >= Self.heartbeat {
                        // A process that just started holds nothing erased: it counts as resynced.
                        try await service.heartbeat(resynced: first)
                        first = false
                        lastHeartbeat = .now
                    }
                    let woken = service.erasureSignal.take()
                    if woken || underWay || ContinuousClock.now - lastCheck >= Self.idleCheck {
                        lastCheck = .now
                        while try await service.performNextErasure() {}
                        if try await service.completeErasures() > 0 {
                            try await service.analyzeAfterErasures()
                        }
                        underWay = try await service.erasuresUnderWay()
                    }
                } catch where Task.isCancelled {
                    break
                } catch {
                    logger.warning("erasure work failed; retrying", metadata: ["error": "\(String(reflecting: error))"])
                }
                // Until woken, or the next look: `interval` while an erasure is under way, else
                // the next heartbeat.
                await service.erasureSignal.wait(upTo: underWay ? interval : Self.heartbeat)
            }
        }
    }
}
