import EventLog
import Foundation
import LocationAuthorization
import Logging
import Metrics
import PostgresClient

/// What one step of phase 1 did (tests observe the page bound and the turns with it).
struct ErasureStepReport: Sendable, Hashable {
    var erasure: UUID
    var appID: UUID
    /// Events the step read: at most the page size.
    var read: Int
    /// Events and devices the step erased.
    var events: Int64
    var devices: Int64
    /// The step finished phase 1: nothing of the person is left in the database.
    var performed: Bool
    /// The error code of a step that failed; it is tried again after a backoff.
    var failure: String?
}

/// Phase 1 of erasure, a page per step (SPEC §13, docs/privacy.md).
///
/// - **Pages.** A step reads at most `pageSize` of the person's events, by device and version,
///   in one transaction under the person's lock (taken exclusively, for that transaction only).
///   Every device of the page but the last has no event left after it and goes whole: its
///   events, stream, state and snapshots, and its count in the measures of the present. The
///   last device of a full page may have more: its events up to the cut go, and its state at
///   the cut is saved as a snapshot (as retention saves one), so that replay and verify agree
///   with what is left between steps. The counters of every erased event are added to the
///   erasure's (`erasure_rollups`), and those the rollup had not counted yet are counted now.
///   The step that finds nothing of the person left ends phase 1. Memory and every statement
///   are bounded by the page, whatever the person's size.
/// - **Racing appends.** Between steps, an append of the person may commit (it waits for a
///   step, never for the whole erasure): the later steps erase it, since phase 1 ends only in a
///   transaction that finds nothing of the person. An append is therefore wholly before that
///   transaction (and erased) or wholly after it (and kept, as a new device).
/// - **Fairness.** Each step serves the app whose erasures had their turn longest ago
///   (`erasure_turns`, its row locked for the step, so concurrent workers serve different
///   apps), and that app's oldest erasure that is due: one app's flood or very large person
///   holds another app's erasure up for a step at most.
/// - **A device.** An erasure of one device of a person (`requestDeviceErasure`) takes the same
///   steps, turns and retries on that device's events alone: its pages never read the person's
///   other devices, and the step that finds nothing of the device left ends its phase 1 (with
///   `locgate_erase_device`, which deletes the device's archive key).
/// - **Retries.** A step that fails is rolled back; its erasure's `attempts` and `lastError` are
///   recorded, and it is due again after `retryDelay`, doubled with each further failure up to
///   `maxRetryDelay`. Others go on meanwhile. An erasure is never given up.
extension ErasureCapability {
    /// One step of phase 1: a page of the due erasure whose app's turn is oldest. False when no
    /// erasure is due, or while `locgate archive` exports (erasures wait for it).
    @discardableResult
    public func performNextErasure() async throws -> Bool {
        try await performErasureStep() != nil
    }

    func performErasureStep() async throws -> ErasureStepReport? {
        let settings = erasureSettings
        let page: ErasurePage?
        do {
            page = try await pool.transaction { connection in try ErasurePage.next(settings: settings, on: connection) }
        } catch let failure as ErasurePage.Failure {
            let code = Self.erasureErrorCode(failure.underlying)
            try await recordErasureFailure(failure.erasure, appID: failure.appID, code: code, settings: settings)
            erasureRuntime.failures.increment()
            logger.warning("erasure step failed; it is tried again after a backoff", metadata: [
                "erasure": "\(failure.erasure.lowercasedText)", "code": "\(code)", "error": "\(Self.erasureLogText(failure.underlying))",
            ])
            return ErasureStepReport(
                erasure: failure.erasure, appID: failure.appID, read: 0, events: 0, devices: 0, performed: false, failure: code)
        }
        guard let page else { return nil }
        erasureRuntime.pages.increment()
        erasureRuntime.eventsErased.increment(by: page.events)
        // This process forgets what the page erased at once; the others at phase 2.
        forgetErased(page.gone.map { StreamKey(appID: page.appID, userID: page.userID, deviceID: $0) })
        if let totals = page.performed {
            if followsChanges {
                try await acknowledgeErasure(page.erasure)
            } else {
                try await forgetErasure(page.erasure)
            }
            erasuresPerformed.increment()
            logger.info("erasure performed", metadata: [
                "erasure": "\(page.erasure.lowercasedText)", "events": "\(totals.events)", "devices": "\(totals.devices)",
            ])
        }
        return ErasureStepReport(
            erasure: page.erasure, appID: page.appID, read: page.read, events: page.events, devices: page.devices,
            performed: page.performed != nil, failure: nil)
    }

    /// The code a failed step leaves in `lastError`: the API's vocabulary (a lock or statement
    /// that timed out is `overloaded`, an unreachable database `databaseUnavailable`, anything
    /// else `internalError`).
    static func erasureErrorCode(_ error: any Error) -> String {
        if let postgres = error as? PostgresError, postgres.sqlState == "55P03" {
            return ServiceError.Code.overloaded.rawValue
        }
        return ServiceError.from(error).code.rawValue
    }

    /// Counts the failure on the erasure's record and makes it due again after the backoff:
    /// `retryDelay` × 2^(failures before this one), at most `maxRetryDelay`. The app's turn is
    /// taken, as by a step that succeeded.
    func recordErasureFailure(_ id: UUID, appID: UUID, code: String, settings: ErasureSettings) async throws {
        let first = max(1, ErasureSettings.milliseconds(settings.retryDelay))
        let most = max(first, ErasureSettings.milliseconds(settings.maxRetryDelay))
        try await pool.transaction { connection in
            try connection.query(
                """
                UPDATE erasures SET attempts = attempts + 1, last_error = \(code),
                    next_attempt_at = now() + least(\(most), \(first) * power(2, least(attempts, 30)))::bigint * interval '1 millisecond'
                WHERE id = \(id) AND status = 'pending'
                """)
            try connection.query("UPDATE erasure_turns SET taken_at = clock_timestamp() WHERE app_id = \(appID)")
        }
    }
}

/// One page of an erasure's phase 1, as it committed.
struct ErasurePage: Sendable {
    var erasure: UUID
    var appID: UUID
    /// The person (in memory only, to forget their devices here).
    var userID: String
    /// The one device erased, for an erasure of a device; nil for the whole person.
    var deviceID: String?
    var read: Int
    var events: Int64
    var devices: Int64
    /// Devices the page erased whole.
    var gone: [String]
    /// The erasure's totals, when this page ended phase 1.
    var performed: (events: Int64, devices: Int64)?

    /// A step that failed after it picked its erasure: the transaction is rolled back, and the
    /// failure recorded on the erasure apart.
    struct Failure: Error {
        var erasure: UUID
        var appID: UUID
        var underlying: any Error
    }

    /// The page deleted other than the events it read: it is rolled back.
    struct Inconsistency: Error, CustomStringConvertible {
        var read: Int
        var deleted: Int64
        var description: String { "erasure page: \(deleted) events deleted for \(read) read" }
    }

    /// The device a page cut short has no state to save (it read none of its events): the
    /// page is rolled back rather than leave the device without its start.
    struct MissingSnapshot: Error {}

    /// Picks the due erasure whose app's turn is oldest and erases a page of it, in the
    /// caller's transaction; nil when none is due or an archive is exporting.
    ///
    /// The step takes the rollup's and the snapshots' locks before it locks any row: a row lock
    /// gives the transaction an id, and a transaction id that waits for a lock (behind a
    /// retention batch, a rebuild) holds back every app's change feed meanwhile, which reads
    /// only below the oldest running transaction (SPEC §5, "Resources"). So it first looks for
    /// a due erasure without locking it, takes the two locks, and only then picks and locks.
    static func next(settings: ErasureSettings, on connection: PostgresConnection) throws -> ErasurePage? {
        // No lock is waited for longer than this: the step fails, and is tried again later.
        try connection.query("SET LOCAL lock_timeout = '\(unescaped: String(ErasureSettings.milliseconds(settings.lockTimeout)))ms'")
        // Not while `locgate archive` exports: it may have read the person's events into its
        // file and its counters already. The erasure waits for it (docs/privacy.md).
        guard try connection.query("SELECT pg_try_advisory_xact_lock_shared(\(EventArchive.runLockKey))")
            .first?.decode(0, as: Bool.self) == true else { return nil }
        guard let due = try connection.query(dueErasure(locking: false)).first else { return nil }
        do {
            // The rollup's lock first (it counts in global order: no count may move meanwhile,
            // and no rebuild reads half a page), then the snapshots' (a retention batch, which
            // saves snapshots too, is wholly before or after), then (in `erase`) the person's:
            // their appends finish or wait. The order every holder of these locks takes them in.
            try connection.query("SELECT pg_advisory_xact_lock(\(AnalyticsRollup.lockKey))")
            try connection.query("SELECT pg_advisory_xact_lock(\(ArchiveSnapshot.lockKey))")
        } catch {
            // A lock not free in time counts against the erasure that was due.
            throw Failure(erasure: try due.decode(0), appID: try due.decode(1), underlying: error)
        }
        guard let row = try connection.query(dueErasure(locking: true)).first else { return nil }
        let id: UUID = try row.decode(0)
        let appID: UUID = try row.decode(1)
        let userID: String = try row.decode(2)
        let deviceID = try row.decodeIfPresent(3, as: String.self)
        do {
            return try erase(id: id, appID: appID, userID: userID, deviceID: deviceID, settings: settings, on: connection)
        } catch {
            throw Failure(erasure: id, appID: appID, underlying: error)
        }
    }

    /// The app whose erasures had their turn longest ago, and its oldest erasure that is due:
    /// `(id, app, user, device)`. With `locking`, the app's turn is locked (and skipped when
    /// another worker serves it now).
    static func dueErasure(locking: Bool) -> PostgresQuery {
        PostgresQuery(unsafeSQL: """
            SELECT x.id, t.app_id, x.user_id, x.device_id
            FROM erasure_turns t
            CROSS JOIN LATERAL (
                SELECT e.id, w.user_id, w.device_id FROM erasures e JOIN erasure_work w ON w.erasure_id = e.id
                WHERE e.app_id = t.app_id AND e.status = 'pending' AND e.performed_at IS NULL AND e.next_attempt_at <= now()
                ORDER BY e.requested_at, e.id
                LIMIT 1) x
            ORDER BY t.taken_at, t.app_id
            LIMIT 1
            \(locking ? "FOR UPDATE OF t SKIP LOCKED" : "")
            """)
    }

    /// One page of one erasure, in the caller's transaction: of the person, or, with `deviceID`,
    /// of that one device of theirs (the same steps, on that device's events alone; the person's
    /// other devices are not read, and stay).
    static func erase(
        id: UUID, appID: UUID, userID: String, deviceID: String? = nil, settings: ErasureSettings, on connection: PostgresConnection
    ) throws -> ErasurePage {
        var page = ErasurePage(
            erasure: id, appID: appID, userID: userID, deviceID: deviceID, read: 0, events: 0, devices: 0, gone: [], performed: nil)
        // The devices erased by its earlier pages come with the row.
        guard let erasure = try connection.query(
            "SELECT devices FROM erasures WHERE id = \(id) AND status = 'pending' AND performed_at IS NULL FOR UPDATE"
        ).first else { return page }
        let devicesBefore: Int64 = try erasure.decode(0)
        // The caller holds the rollup's lock and the snapshots' (`next`); the person's last:
        // their appends finish or wait.
        try EventLog.lockPerson(appID: appID, userID: userID, on: connection)
        let checkpoint = try AnalyticsRollup.checkpoint(on: connection)
        let limit = max(1, settings.pageSize)
        let events = try EventLog.eventsPage(ofUser: userID, device: deviceID, appID: appID, limit: limit, on: connection)
        page.read = events.count
        let full = events.count == limit

        // The page's devices in order, with the last version read of each.
        var devices: [String] = []
        var through: [String: Int64] = [:]
        for event in events {
            if through[event.stream.deviceID] == nil { devices.append(event.stream.deviceID) }
            through[event.stream.deviceID] = event.version
        }
        // A full page may have cut its last device short. Every other device of the page has
        // no event left after it, and goes whole; so, when the page is not full, does every
        // device of the person without events in the log (archived, or forgotten by retention);
        // for an erasure of one device, that device when it has no event left in the log.
        let cut = full ? devices.last : nil
        var gone = devices.filter { $0 != cut }
        if !full {
            let seen = Set(devices)
            gone += try EventLog.devices(ofUser: userID, device: deviceID, appID: appID, limit: limit, on: connection)
                .filter { !seen.contains($0) }
        }

        // Counters that name no one stay: every erased event's in `erasure_rollups` (a replay
        // adds them), and those the rollup has not reached yet are counted now, as it would have.
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
        try all.add(to: .erasure(id), on: connection)

        // The device cut short: its state at the cut, where replay and history start now.
        let snapshot: Int64? = try cut.map { device in
            try saveSnapshot(StreamKey(appID: appID, userID: userID, deviceID: device), events: events, on: connection)
        }

        // The states of the snapshots the page may delete, to be looked at once it is done: a
        // state that only a snapshot kept has no row in the maintained counts to find it by
        // (`UnusedStates`).
        try recordSnapshotStates(appID: appID, userID: userID, devices: devices + gone, on: connection)
        let counts: [Int64] = try connection.query(
            """
            SELECT unnest(locgate_erase_user_page(\(appID), \(userID), \(PostgresArray(devices)),
                                                  \(PostgresArray(devices.map { through[$0] ?? 0 })), \(PostgresArray(gone)), \(snapshot)))
            """
        ).map { try $0.decode(0) }
        page.events = counts.first ?? 0
        page.devices = counts.dropFirst().first ?? 0
        guard page.events == Int64(events.count) else { throw Inconsistency(read: events.count, deleted: page.events) }
        page.gone = gone
        if !gone.isEmpty {
            try connection.query(
                """
                INSERT INTO erasure_devices (erasure_id, device_id)
                SELECT \(id), d FROM unnest(\(PostgresArray(gone))) AS d
                ON CONFLICT DO NOTHING
                """)
        }

        var performed = false
        if !full, try !holdsAnything(appID: appID, userID: userID, deviceID: deviceID, on: connection) {
            // Nothing of the person (or of the device) is left in the log: their archive key
            // goes (every archive line sealed with it is unreadable from now on), with any row
            // the pages did not reach, and the app versions only erased devices reported are
            // folded.
            let closing: PostgresQuery
            if let deviceID {
                // The person's key of earlier releases sealed this device's archived lines too:
                // it goes when the device existed (not for a device nobody knew).
                let existed = devicesBefore + page.devices > 0
                closing = "SELECT unnest(locgate_erase_device(\(appID), \(userID), \(deviceID), \(existed)))"
            } else {
                closing = "SELECT unnest(locgate_erase_user(\(appID), \(userID)))"
            }
            try recordSnapshotStates(appID: appID, userID: userID, devices: deviceID.map { [$0] }, on: connection)
            let rest: [Int64] = try connection.query(closing).map { try $0.decode(0) }
            // Their exposures to experiments (SPEC §16) go too; the experiments' counts stay,
            // as the analytics' do: they name no one.
            try ExperimentExposures.erase(appID: appID, userID: userID, deviceID: deviceID, on: connection)
            page.events += rest.first ?? 0
            page.devices += rest.dropFirst().first ?? 0
            try foldErasedVersions(erasure: id, appID: appID, on: connection)
            // Device lists an earlier release kept in the work row.
            try connection.query(
                """
                INSERT INTO erasure_devices (erasure_id, device_id)
                SELECT w.erasure_id, d FROM erasure_work w, unnest(w.device_ids) AS d WHERE w.erasure_id = \(id)
                ON CONFLICT DO NOTHING
                """)
            performed = true
        }
        let totals = try connection.query(
            """
            UPDATE erasures SET events = events + \(page.events), devices = devices + \(page.devices),
                erased_at = coalesce(erased_at, now()), performed_at = CASE WHEN \(performed) THEN now() END
            WHERE id = \(id)
            RETURNING events, devices
            """
        ).first
        try connection.query("UPDATE erasure_turns SET taken_at = clock_timestamp() WHERE app_id = \(appID)")
        if performed {
            let totalEvents = try totals?.decode(0, as: Int64.self) ?? 0
            let totalDevices = try totals?.decode(1, as: Int64.self) ?? 0
            page.performed = (events: totalEvents, devices: totalDevices)
            // Phase 2: every server forgets the devices (the payload names the erasure only).
            try connection.query("SELECT pg_notify(\(ErasureCapability.erasureChannel), \(id.uuidString))")
        }
        return page
    }

    /// Whether the log still holds anything the erasure is to erase: the person, or, for an
    /// erasure of one device, that device.
    static func holdsAnything(appID: UUID, userID: String, deviceID: String?, on connection: PostgresConnection) throws -> Bool {
        guard let deviceID else { return try EventLog.holdsPerson(appID: appID, userID: userID, on: connection) }
        return try EventLog.holdsDevice(appID: appID, userID: userID, deviceID: deviceID, on: connection)
    }

    /// Saves the state of `key` after its events in `events` (on top of its latest snapshot)
    /// as a snapshot under a new `erasure` row of `event_archives`; returns that row's id.
    static func saveSnapshot(_ key: StreamKey, events: [RecordedEvent], on connection: PostgresConnection) throws -> Int64 {
        let stream = events.filter { $0.stream == key }
        var projection = Replay.Projection()
        projection.devices = try ArchiveSnapshot.streams([key], on: connection)
        var lastOccurred = Date(timeIntervalSince1970: 0)
        for event in stream {
            projection.fold(event)
            lastOccurred = max(lastOccurred, event.occurredAt)
        }
        guard let device = projection.devices[key],
              let archive = try connection.query(
                  """
                  INSERT INTO event_archives (before, boundary, partitions, events, file, sha256, bytes, format, kind)
                  VALUES (now(), 0, '{}', \(Int64(stream.count)), NULL, NULL, 0, 2, 'erasure')
                  RETURNING id
                  """
              ).first?.decode(0, as: Int64.self)
        else { throw MissingSnapshot() }
        try ArchiveSnapshot.save([device], lastOccurred: [key: lastOccurred], archive: archive, on: connection)
        return archive
    }

    /// Records in `state_kind_checks` the states of the person's snapshots (of `devices` only,
    /// when given): `UnusedStates` looks at each once the erasure is performed, and forgets it
    /// when nothing refers to it any more.
    static func recordSnapshotStates(appID: UUID, userID: String, devices: [String]?, on connection: PostgresConnection) throws {
        if let devices {
            guard !devices.isEmpty else { return }
            try connection.query(
                """
                INSERT INTO state_kind_checks (state_id)
                SELECT DISTINCT state_id FROM stream_snapshots
                WHERE app_id = \(appID) AND user_id = \(userID) AND device_id = ANY(\(PostgresArray(devices)))
                ON CONFLICT DO NOTHING
                """)
        } else {
            try connection.query(
                """
                INSERT INTO state_kind_checks (state_id)
                SELECT DISTINCT state_id FROM stream_snapshots WHERE app_id = \(appID) AND user_id = \(userID)
                ON CONFLICT DO NOTHING
                """)
        }
    }

    /// Folds into "(erased)" the app versions of the erasure's counters that only erased
    /// devices reported (`ErasedVersions`), read a fold statement's worth at a time.
    static func foldErasedVersions(erasure id: UUID, appID: UUID, on connection: PostgresConnection) throws {
        var after = ""
        while true {
            let versions: [String] = try connection.query(
                """
                SELECT DISTINCT app_version FROM erasure_rollups
                WHERE erasure_id = \(id) AND app_version > \(after)
                ORDER BY app_version LIMIT \(ErasedVersions.batch)
                """
            ).map { try $0.decode(0) }
            guard let last = versions.last else { return }
            try ErasedVersions.fold(versions, appID: appID, on: connection)
            guard versions.count == ErasedVersions.batch else { return }
            after = last
        }
    }
}
