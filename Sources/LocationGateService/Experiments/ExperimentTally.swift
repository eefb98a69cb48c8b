import EventLog
import Foundation
import LocationAuthorization
import Logging
import PostgresClient
import ServiceLifecycle

/// Counts experiments' answers as events arrive (SPEC §16 "Results"): reads the log after its
/// checkpoint, in global order, under an advisory lock, a page at a time, and saves the
/// checkpoint in the same transaction, as `AnalyticsRollup` does, so that every event is
/// counted once however many servers run it. A background service of every server
/// (`GateService.backgroundServices`); a results request catches it up first.
///
/// What an event does here:
/// - **An answer** (explicit or inferred, O2; the outcome's analytics name the prompt it
///   answered) to a prompt kind of an experiment of the app, to a prompt shown while the
///   experiment ran (at or below its stop's position; SPEC §16: a prompt "shown after the
///   exposure and before the experiment stopped", so an answer given just after a stop to a
///   prompt the variant showed still counts): it is the first qualifying answer of each unit of
///   the stream (`device:` the stream, `install:` the `installId` the stream had then) whose
///   exposure is still waiting, was made before the prompt was shown (the exposure's position
///   is below that of the event that showed it) and was not replaced. Such an exposure is
///   marked answered, with whether the answer granted what the prompt asked, and its
///   variant's `answered` and `granted` are added to.
/// - **A correction** (O2, D6): the exposure that counted the corrected answer takes the
///   corrected grant, and `granted` moves with it, also after a stop (it corrects an answer
///   that counted).
/// - **I1's reinstall**: the exposures of the stream's units so far are marked replaced at the
///   event's position: later answers do not count for them, and the next evaluation exposes
///   the new installation.
///
/// Exposures are written by evaluations (`ExperimentExposures.record`), which count `exposed`
/// themselves. While no app has an experiment, a page only moves the checkpoint to the head.
public final class ExperimentTally: Service, Sendable {
    public static let checkpointName = "experiments"
    /// The advisory lock tally writers take turns on ("exptally").
    public static let lockKey = Int64(0x6578_7074_616c_6c79)

    let pool: PostgresConnectionPool
    let logger: Logger

    public init(pool: PostgresConnectionPool, logger: Logger) {
        self.pool = pool
        self.logger = logger
    }

    /// Counts everything readable now; returns the events read. With
    /// `waitForInFlightCommits`, first waits (up to `patience`) for every writing transaction
    /// running at the call, so that every append acknowledged before it is counted; the lock
    /// is tried for as long (another holder is counting the same events meanwhile).
    @discardableResult
    public func catchUp(pageSize: Int = 5000, waitForInFlightCommits: Bool = false, patience: Duration = .seconds(2)) async throws -> Int {
        if waitForInFlightCommits {
            try await AnalyticsRollup(pool: pool, logger: logger).waitForInFlightCommits(patience: patience)
        }
        var total = 0
        let deadline = ContinuousClock.now + patience
        var backoff = PollBackoff(first: .milliseconds(10))
        while true {
            let read = try await pool.transaction { connection in
                try Self.countPage(pageSize: pageSize, on: connection)
            }
            guard let read else {
                guard ContinuousClock.now < deadline else { return total }
                try await Task.sleep(for: backoff.next() ?? .milliseconds(100))
                continue
            }
            total += read
            if read < pageSize { return total }
        }
    }

    /// What the tally reads of each event: its place and stream, and the outcome only of an
    /// event that can count here (an answer, a correction, a reinstall).
    static let countedColumns = """
        tx_id::text, position, app_id, user_id, device_id, version,
        CASE WHEN outcome->'analytics' ? 'prompt'
                  OR outcome->'effects' @> '[{"kind":"answerCorrected"}]'
                  OR outcome->'effects' @> '[{"kind":"reset"}]'
             THEN outcome::text END
        """

    /// Counts one page; nil when another holder has the lock.
    static func countPage(pageSize: Int, on connection: PostgresConnection) throws -> Int? {
        let acquired = try connection.query("SELECT pg_try_advisory_xact_lock(\(lockKey))").first?.decode(0, as: Bool.self) ?? false
        guard acquired else { return nil }
        let checkpoint = try EventLog.checkpoint(named: checkpointName, on: connection)
        // No experiment anywhere: nothing before the head can count for an exposure made from
        // now on (its position will be past every event readable now), so the tally skips to
        // the head. The head is read first, then the experiments, so that an experiment made
        // in between is seen.
        let head = try connection.query(
            """
            SELECT tx_id::text, position FROM events
            WHERE tx_id < pg_snapshot_xmin(pg_current_snapshot())
            ORDER BY events.tx_id DESC, events.position DESC LIMIT 1
            """
        ).first.map { LogPosition(transactionID: try $0.decode(0), position: try $0.decode(1)) }
        let experiments = try connection.query("SELECT 1 FROM experiments LIMIT 1")
        guard !experiments.isEmpty else {
            if let head, head > checkpoint { try EventLog.saveCheckpoint(head, named: checkpointName, on: connection) }
            return 0
        }
        let rows = try EventLog.read(countedColumns, after: checkpoint, limit: pageSize, on: connection)
        guard let lastRow = rows.last else { return 0 }
        var page = TallyPage()
        for row in rows {
            guard let text = try row.decodeIfPresent(6, as: String.self), let outcome = try? JSONText.outcome(text) else { continue }
            let stream = StreamKey(appID: try row.decode(2), userID: try row.decode(3), deviceID: try row.decode(4))
            try page.count(
                outcome, stream: stream, version: try row.decode(5), position: try row.decode(1), on: connection)
        }
        try ExperimentCounts.add(page.changes, on: connection)
        try EventLog.saveCheckpoint(try EventLog.position(of: lastRow), named: checkpointName, on: connection)
        return rows.count
    }

    public func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do {
                    try await self.catchUp()
                } catch where Task.isCancelled {
                    break  // shutting down
                } catch {
                    self.logger.warning("experiment tally failed; retrying", metadata: ["error": "\(String(reflecting: error))"])
                }
                try? await Task.sleep(for: .milliseconds(500))
            }
        }
    }
}

/// One page of the tally: the experiments of the page's apps (read once), and the counts it
/// adds, written with its checkpoint.
struct TallyPage {
    /// An experiment as the tally needs it: which prompts count, and until which position.
    struct Counted {
        var key: String
        var prompt: ExperimentPromptKinds
        /// Nil while it runs; the log's last position handed out when it stopped: an answer
        /// counts only for a prompt shown at this position or below (inserted before the stop).
        var stoppedPosition: Int64?

        /// Whether an answer to `prompt`, shown at `shownPosition`, can count.
        func counts(_ prompt: Prompt, shownAt shownPosition: Int64) -> Bool {
            self.prompt.contains(prompt) && stoppedPosition.map { shownPosition <= $0 } ?? true
        }
    }

    private var byApp: [UUID: [Counted]] = [:]
    private(set) var changes: [ExperimentCounts.Variant: ExperimentCounts.Change] = [:]

    /// Applies what one event does (see `ExperimentTally`).
    mutating func count(_ outcome: EventOutcome, stream: StreamKey, version: Int64, position: Int64, on connection: PostgresConnection) throws {
        let experiments = try self.experiments(of: stream.appID, on: connection)
        guard !experiments.isEmpty else { return }
        for effect in outcome.effects {
            if case .reset(.reinstalled) = effect {
                try replace(stream: stream, version: version, position: position, on: connection)
            }
        }
        if let analytics = outcome.analytics, let prompt = analytics.prompt {
            let candidates = experiments.filter { $0.prompt.contains(prompt) }
            if !candidates.isEmpty {
                let granted = Self.grantedWhatItAsked(prompt, analytics: analytics)
                try answer(prompt, granted: granted, experiments: candidates, stream: stream, version: version, position: position, on: connection)
            }
        }
        for effect in outcome.effects {
            guard case .answerCorrected(let prompt, _, let to) = effect else { continue }
            let keys = experiments.filter { $0.prompt.contains(prompt) }.map(\.key)
            guard !keys.isEmpty else { continue }
            try correct(prompt, to: to, keys: keys, stream: stream, version: version, position: position, on: connection)
        }
    }

    /// Whether an answer gave what its prompt asked (`Prompt.grantsWhatItAsked`), from what the
    /// append stored of it: the analytics' `granted` (authorized afterwards; for accuracy
    /// prompts full accuracy, for the location button `allow`, for Android's background prompts
    /// `allowAllTheTime`, never for `dismissed`) and `always` (in Always afterwards), computed
    /// in the append from the state the answer left, which is what the domain's rule reads.
    static func grantedWhatItAsked(_ prompt: Prompt, analytics: EventAnalytics) -> Bool {
        prompt.asksForAlways ? analytics.always == true : analytics.granted == true
    }

    /// The grant of an answer corrected to `choice` (O2: Allow While Using was Allow Once; D6:
    /// Android's one-time form). Prompts whose grant depends on the choice alone take the
    /// domain's rule on it; for the others (When In Use, Android's foreground dialog, the
    /// Always prompts) what the answer granted was read from the state it left, which a
    /// correction to a one-time form does not take back: only a refusal would.
    static func correctedGrant(_ prompt: Prompt, to choice: PromptChoice, was granted: Bool) -> Bool {
        switch prompt {
        case .whenInUse, .foreground, .alwaysFirst, .alwaysUpgrade, .alwaysSecond, .legacyAlways:
            return [PromptChoice.dontAllow, .deny, .dismissed].contains(choice) ? false : granted
        case .fullAccuracy, .precise, .locationButton, .backgroundDialog, .backgroundSettings:
            return prompt.grantsWhatItAsked(choice, after: DeviceState())
        }
    }

    private mutating func experiments(of appID: UUID, on connection: PostgresConnection) throws -> [Counted] {
        if let known = byApp[appID] { return known }
        let rows = try connection.query(
            """
            SELECT key, definition::text, stopped_position FROM experiments
            WHERE app_id = \(appID) AND (state = 'running' OR stopped_position IS NOT NULL)
            """)
        var counted: [Counted] = []
        for row in rows {
            let key: String = try row.decode(0)
            let text: String = try row.decode(1)
            // A definition that cannot be read back counts nothing (`ExperimentCatalog` reports it).
            guard let definition = try? ExperimentDefinition(key: key, body: Data(text.utf8)) else { continue }
            counted.append(Counted(key: key, prompt: definition.prompt, stoppedPosition: try row.decodeIfPresent(2, as: Int64.self)))
        }
        byApp[appID] = counted
        return counted
    }

    /// The stream's units as of `version`: its own, and its installation's when a
    /// `contextReported` up to that version gave an `installId`. Where retention erased the
    /// stream's prefix (SPEC §13) the report may be gone from `events`; the snapshot that took
    /// the prefix's place keeps the installation it had (`stream_snapshots.install_id`), and
    /// any report left in `events` is later than it.
    private static func units(of stream: StreamKey, atVersion version: Int64, on connection: PostgresConnection) throws -> [String] {
        var installID = try connection.query(
            """
            SELECT data->>'installId' FROM events
            WHERE app_id = \(stream.appID) AND user_id = \(stream.userID) AND device_id = \(stream.deviceID)
              AND version <= \(version) AND type = 'contextReported' AND data ? 'installId'
            ORDER BY version DESC LIMIT 1
            """
        ).first?.decodeIfPresent(0, as: String.self)
        if installID == nil {
            installID = try connection.query(
                """
                SELECT install_id FROM stream_snapshots
                WHERE app_id = \(stream.appID) AND user_id = \(stream.userID) AND device_id = \(stream.deviceID)
                  AND version <= \(version) AND install_id IS NOT NULL
                ORDER BY version DESC LIMIT 1
                """
            ).first?.decodeIfPresent(0, as: String.self)
        }
        var units = [ExperimentUnit.device(userID: stream.userID, deviceID: stream.deviceID).text]
        if let installID { units.append(ExperimentUnit.install(installID).text) }
        return units
    }

    private mutating func answer(
        _ prompt: Prompt, granted: Bool, experiments: [Counted], stream: StreamKey, version: Int64, position: Int64,
        on connection: PostgresConnection
    ) throws {
        // Where the prompt answered was shown: the stream's latest event up to this one that
        // showed it. An exposure counts the answer only when it was made before that, and an
        // experiment only when it had not stopped by then.
        let shownFilter = #"[{"kind":"promptShown","prompt":""# + prompt.rawValue + #""}]"#
        guard let shown = try connection.query(
            """
            SELECT position FROM events
            WHERE app_id = \(stream.appID) AND user_id = \(stream.userID) AND device_id = \(stream.deviceID)
              AND version <= \(version) AND outcome->'effects' @> \(PostgresJSON(shownFilter))
            ORDER BY version DESC LIMIT 1
            """
        ).first?.decode(0, as: Int64.self) else { return }
        let keys = experiments.filter { $0.counts(prompt, shownAt: shown) }.map(\.key)
        guard !keys.isEmpty else { return }
        let units = try Self.units(of: stream, atVersion: version, on: connection)
        let answered = try connection.query(
            """
            UPDATE experiment_exposures
            SET answered = true, answer_position = \(position), answer_prompt = \(prompt.rawValue), granted = \(granted)
            WHERE app_id = \(stream.appID) AND experiment_key = ANY(\(PostgresArray(keys))) AND unit = ANY(\(PostgresArray(units)))
              AND NOT answered AND replaced_position IS NULL AND exposed_position < \(shown)
            RETURNING experiment_key, variant
            """)
        for row in answered {
            let variant = ExperimentCounts.Variant(appID: stream.appID, experiment: try row.decode(0), variant: try row.decode(1))
            changes[variant, default: ExperimentCounts.Change()].answered += 1
            if granted { changes[variant, default: ExperimentCounts.Change()].granted += 1 }
        }
    }

    private mutating func correct(
        _ prompt: Prompt, to choice: PromptChoice, keys: [String], stream: StreamKey, version: Int64, position: Int64,
        on connection: PostgresConnection
    ) throws {
        let units = try Self.units(of: stream, atVersion: version, on: connection)
        let rows = try connection.query(
            """
            SELECT experiment_key, unit, variant, granted FROM experiment_exposures
            WHERE app_id = \(stream.appID) AND experiment_key = ANY(\(PostgresArray(keys))) AND unit = ANY(\(PostgresArray(units)))
              AND answered AND answer_prompt = \(prompt.rawValue) AND answer_position < \(position)
            FOR UPDATE
            """)
        for row in rows {
            let was: Bool = try row.decode(3)
            let now = Self.correctedGrant(prompt, to: choice, was: was)
            guard now != was else { continue }
            let key: String = try row.decode(0)
            let unit: String = try row.decode(1)
            try connection.query(
                """
                UPDATE experiment_exposures SET granted = \(now)
                WHERE app_id = \(stream.appID) AND experiment_key = \(key) AND unit = \(unit)
                """)
            let variant = ExperimentCounts.Variant(appID: stream.appID, experiment: key, variant: try row.decode(2))
            changes[variant, default: ExperimentCounts.Change()].granted += now ? 1 : -1
        }
    }

    /// I1's reinstall at `position`: the units the stream had before it (its own, and the
    /// installation it reported until then) are replaced.
    private func replace(stream: StreamKey, version: Int64, position: Int64, on connection: PostgresConnection) throws {
        let units = try Self.units(of: stream, atVersion: version - 1, on: connection)
        try connection.query(
            """
            UPDATE experiment_exposures SET replaced_position = \(position)
            WHERE app_id = \(stream.appID) AND unit = ANY(\(PostgresArray(units)))
              AND replaced_position IS NULL AND exposed_position < \(position)
            """)
    }
}
