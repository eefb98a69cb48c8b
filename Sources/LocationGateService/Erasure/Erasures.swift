import EventLog
import Foundation
import LocationAuthorization
import Logging
import Metrics
import PostgresClient

/// An erasure as `GET /v1/erasures/{id}` shows it (SPEC §13): no user or device id.
public struct ErasureRecord: Sendable, Hashable, Encodable {
    public var id: UUID
    public var status: String
    public var requestedAt: String
    /// Null while pending (written, not left out).
    public var completedAt: String?
    /// Erased so far: the totals once it is done.
    public var events: Int64
    public var devices: Int64
    /// How many of its steps failed (each was tried again after a backoff).
    public var attempts: Int64
    /// The error code of the last failed step (`overloaded`, `databaseUnavailable`,
    /// `internalError`), or null when none failed. Written, not left out.
    public var lastError: String?

    /// The record's JSON: the id in lower case, `completedAt` and `lastError` null when unset.
    public func encode(to encoder: any Encoder) throws {
        enum Keys: String, CodingKey { case id, status, requestedAt, completedAt, events, devices, attempts, lastError }
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(id.lowercasedText, forKey: .id)
        try container.encode(status, forKey: .status)
        try container.encode(requestedAt, forKey: .requestedAt)
        try container.encode(completedAt, forKey: .completedAt)
        try container.encode(events, forKey: .events)
        try container.encode(devices, forKey: .devices)
        try container.encode(attempts, forKey: .attempts)
        try container.encode(lastError, forKey: .lastError)
    }
}

/// Erasure (SPEC §13) in two phases.
///
/// 1. **The database forgets**, a page at a time (`ErasureStep.swift`): each page is one
///    transaction under the person's lock, the person's devices go whole or, for the one a
///    page cuts, as a prefix with a snapshot at the cut; the counters of the erased events are
///    kept in `erasure_rollups`. The last page, the one that finds nothing of the person left,
///    deletes the archive key, folds the app versions only erased devices reported into
///    "(erased)", marks the erasure performed and notifies `locgate_erasures` with its id (not
///    the person). The devices erased are listed in `erasure_devices` for phase 2.
/// 2. **Every process forgets.** Each server's cache follower drops the devices from its cache,
///    a page of the list at a time, wakes the push streams of that person, and acknowledges;
///    once every live server process has acknowledged it or emptied its caches since (a
///    resync), the app's states that no device is in are forgotten (`UnusedStates`: no row of
///    the maintained counts and no state of the dictionary keeps the client text only erased
///    devices reported), the erasure is `done`, and its device list and work row, the last
///    copies of the ids, are deleted.
///
/// Nothing gathers statistics after an erasure: the columns of ids and client text have none
/// (migration 022), and an ANALYZE would hold a transaction id, and with it every app's change
/// feed, for as long as it samples the log (SPEC §5).
///
/// Phase 1 runs in whichever process picks the work up (`ErasureWorker`, or `locgate erase`),
/// the apps taking turns; a crash between the request and phase 1, or in it, leaves the work
/// row and the person's remaining rows for the next step, so an acknowledged erasure is never
/// undone.
extension ErasureCapability {
    /// The advisory lock an app's erasure requests take turns on, so that the bound on pending
    /// erasures is exact under concurrent requests.
    static func erasureRequestLockKey(appID: UUID) -> Int64 {
        Int64(bitPattern: FNV1a.hash(Array("locgate-erasure-requests".utf8) + appID.lowercasedText.utf8))
    }

    /// `DELETE /v1/users/{u}`: records the erasure and its work, then answers at once (202).
    /// An unknown user gets the same answer; phase 1 finds nothing and the record says 0.
    /// An app with `maxPendingPerApp` erasures pending already gets 429 `rateLimited`.
    /// `erasureRequested` is recorded in the same transaction, naming the erasure, never the
    /// person (SPEC §14).
    public func requestErasure(appID: UUID, userID: String, actor: AuditActor) async throws(ServiceError) -> ErasureRecord {
        try await recordErasure(appID: appID, userID: userID, deviceID: nil, actor: actor)
    }

    /// `DELETE /v1/users/{u}/devices/{d}`: an erasure of one device of the person, with the
    /// same record, pages, turns, retries, acknowledgements, bound and audit entry
    /// (`erasureRequested`, naming the erasure only) as a person's; the person's other devices
    /// stay. An unknown device gets the same answer (a record of 0).
    public func requestDeviceErasure(
        appID: UUID, userID: String, deviceID: String, actor: AuditActor
    ) async throws(ServiceError) -> ErasureRecord {
        try await recordErasure(appID: appID, userID: userID, deviceID: deviceID, actor: actor)
    }

    /// Records an erasure of the person, or of one device of theirs, and its work, within the
    /// app's bound on pending erasures; wakes this process's worker once it is committed.
    func recordErasure(appID: UUID, userID: String, deviceID: String?, actor: AuditActor) async throws(ServiceError) -> ErasureRecord {
        let id = UUID()
        let limit = max(1, erasureSettings.maxPendingPerApp)
        let lockKey = Self.erasureRequestLockKey(appID: appID)
        let record = try await database {
            try await pool.transaction { connection in
                try connection.query("SELECT pg_advisory_xact_lock(\(lockKey))")
                let pending = try connection.query(
                    "SELECT count(*) FROM (SELECT 1 FROM erasures WHERE app_id = \(appID) AND status = 'pending' LIMIT \(limit)) p"
                ).first?.decode(0, as: Int64.self) ?? 0
                guard pending < Int64(limit) else {
                    throw ServiceError(.rateLimited, "this app has \(limit) erasures pending already; retry once some are done")
                }
                try connection.query("INSERT INTO erasures (id, app_id, status) VALUES (\(id), \(appID), 'pending')")
                try connection.query(
                    "INSERT INTO erasure_work (erasure_id, app_id, user_id, device_id) VALUES (\(id), \(appID), \(userID), \(deviceID))")
                // The app takes part in the worker's turns from now on (first, if it never had one).
                try connection.query("INSERT INTO erasure_turns (app_id) VALUES (\(appID)) ON CONFLICT (app_id) DO NOTHING")
                try AdminAuditLog.record(
                    AuditChange(appID: appID, actor: actor, action: .erasureRequested, target: id.lowercasedText), on: connection)
                try connection.query("SELECT pg_notify(\(Self.erasureChannel), \("work"))")
                return try Self.erasureRecord(appID: appID, id: id, on: connection) ?? ErasureRecord(
                    id: id, status: "pending", requestedAt: RFC3339.string(from: Date()), completedAt: nil, events: 0, devices: 0,
                    attempts: 0, lastError: nil)
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
            SELECT id, status, requested_at, completed_at, events, devices, attempts, last_error FROM erasures
            WHERE id = \(id) AND app_id = \(appID)
            """
        ).first.map { row in
            ErasureRecord(
                id: try row.decode(0), status: try row.decode(1), requestedAt: RFC3339.string(from: try row.decode(2)),
                completedAt: try row.decodeIfPresent(3, as: Date.self).map(RFC3339.string(from:)),
                events: try row.decode(4), devices: try row.decode(5), attempts: try row.decode(6),
                lastError: try row.decodeIfPresent(7, as: String.self))
        }
    }

    /// Device ids phase 2 reads, and a completion deletes, per statement.
    static let erasureDevicePage = 5000

    /// Drops erased devices from this process's caches (their states, and what it knows of
    /// their exposures to experiments) and wakes their push streams.
    func forgetErased(_ devices: [StreamKey]) {
        guard !devices.isEmpty else { return }
        let changes = devices.map { StreamChange(stream: $0, version: Int64.max) }
        for change in changes { cache.removeIfOlder(change.stream, than: change.version) }
        exposures.forget(streams: devices)
        hub.publish(changes)
    }

    /// Forgets here every device the erasure erased, a page of its list at a time.
    func forgetErasure(_ id: UUID) async throws {
        var after = ""
        while true {
            let page: [StreamKey] = try await pool.query(
                """
                SELECT w.app_id, w.user_id, d.device_id
                FROM erasure_work w JOIN erasure_devices d ON d.erasure_id = w.erasure_id
                WHERE w.erasure_id = \(id) AND d.device_id > \(after)
                ORDER BY d.device_id LIMIT \(Self.erasureDevicePage)
                """
            ).map { row in StreamKey(appID: try row.decode(0), userID: try row.decode(1), deviceID: try row.decode(2)) }
            forgetErased(page)
            guard let last = page.last, page.count == Self.erasureDevicePage else { return }
            after = last.deviceID
        }
    }

    /// Phase 2 as the follower sees it: the erasure's devices forgotten here, then acknowledged.
    func acknowledgeErasure(_ id: UUID) async throws {
        try await forgetErasure(id)
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

    /// The condition under which a performed erasure (`e`) is forgotten everywhere: no server
    /// process seen within the liveness window has neither acknowledged it nor emptied its
    /// caches since it was performed.
    private static var forgottenEverywhere: String {
        """
        NOT EXISTS (
            SELECT 1 FROM server_processes p
            WHERE p.seen_at > now() - \(processLiveness) * interval '1 millisecond'
              AND p.resynced_at < e.performed_at
              AND NOT EXISTS (SELECT 1 FROM erasure_acks a WHERE a.erasure_id = e.id AND a.process_id = p.id))
        """
    }

    /// Marks `done` the performed erasures that each live server process has acknowledged, or
    /// has emptied its caches since, once their apps' unused states are forgotten
    /// (`UnusedStates`: no row of the maintained counts at zero and no state of the dictionary
    /// keeps the client text that only the erased devices reported); deletes their device
    /// lists (a page per statement: a person may have had a great many devices), work rows and
    /// acknowledgements. An app whose states could not be forgotten now (a lock not free in
    /// time) has its erasures completed by a later call.
    @discardableResult
    public func completeErasures() async throws -> Int {
        let ready: [(id: UUID, appID: UUID)] = try await pool.query(PostgresQuery(
            unsafeSQL: """
                SELECT e.id, e.app_id FROM erasures e
                WHERE e.status = 'pending' AND e.performed_at IS NOT NULL AND \(Self.forgottenEverywhere)
                ORDER BY e.performed_at LIMIT 1000
                """)
        ).map { (id: try $0.decode(0, as: UUID.self), appID: try $0.decode(1, as: UUID.self)) }
        guard !ready.isEmpty else { return 0 }
        // Each app's states after its erasures were performed (their pages committed before
        // the read above), in transactions of their own.
        var forgotten: Set<UUID> = []
        for appID in Set(ready.map(\.appID)) {
            do {
                try await pool.withConnection { connection in _ = try UnusedStates.forget(appID: appID, on: connection) }
                forgotten.insert(appID)
            } catch {
                logger.warning("erasure: the app's unused states are not forgotten yet; its erasures complete later", metadata: [
                    "app": "\(appID.lowercasedText)", "error": "\(Self.erasureLogText(error))",
                ])
            }
        }
        let candidates = ready.filter { forgotten.contains($0.appID) }.map(\.id)
        guard !candidates.isEmpty else { return 0 }
        return try await pool.transaction { connection in
            let done: [UUID] = try connection.query(PostgresQuery(
                unsafeSQL: """
                    SELECT e.id FROM erasures e
                    WHERE e.id = ANY($1) AND e.status = 'pending' AND \(Self.forgottenEverywhere)
                    ORDER BY e.performed_at
                    FOR UPDATE OF e SKIP LOCKED
                    """, binds: [PostgresArray(candidates).postgresBind])
            ).map { try $0.decode(0) }
            guard !done.isEmpty else { return 0 }
            while try connection.query(
                """
                WITH gone AS (
                    DELETE FROM erasure_devices WHERE (erasure_id, device_id) IN (
                        SELECT erasure_id, device_id FROM erasure_devices WHERE erasure_id = ANY(\(PostgresArray(done)))
                        LIMIT \(Self.erasureDevicePage))
                    RETURNING 1)
                SELECT count(*) FROM gone
                """
            ).first?.decode(0, as: Int64.self) == Int64(Self.erasureDevicePage) {}
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

    /// A failure as the logs may name it: the error's type and SQLSTATE, never its message
    /// (a server message can quote a row, and with it an id).
    static func erasureLogText(_ error: any Error) -> String {
        if let postgres = error as? PostgresError {
            return "PostgresError.\(postgres.code.rawValue) \(postgres.sqlState ?? "")"
        }
        if let service = error as? ServiceError { return service.code.rawValue }
        return String(describing: type(of: error))
    }
}
