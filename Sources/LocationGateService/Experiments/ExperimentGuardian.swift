import Foundation
import LocationAuthorization
import Logging
import PostgresClient
import ServiceLifecycle

/// Runs the guard of SPEC §16: every guarded experiment that runs is checked at least once a
/// minute, by one server at a time, and stopped when the domain's rule finds a variant clearly
/// worse than the control (`ExperimentGuard.breach`), with the control as winner, `stopReason`
/// `guard`, and one audit entry `experimentStopped` whose actor is `{"guard": true}` and whose
/// details are `{"variant", "controlRate", "variantRate", "p"}`. The stop is a catalog change
/// like an operator's (`ExperimentCatalog.stop`): every server and push stream hears of it.
///
/// One server at a time: a check takes the experiment whose check is due longest ago with
/// `FOR UPDATE SKIP LOCKED` and records the check (`guard_checked_at`) in the same transaction,
/// so that servers share the checks and none checks what another is checking. The row lock is
/// the one an operator's stop takes, so the guard and an operator racing make one stop and one
/// audit entry. Before a round of checks the tally is caught up, so that the counts judged hold
/// every answer counted so far.
public final class ExperimentGuardian: Service, Sendable {
    /// How long after its last check an experiment is due again; with `pause` between rounds,
    /// each guarded experiment is checked within a minute of the event that crossed the line.
    public static let checkEvery: Duration = .seconds(30)
    /// The pause between rounds.
    public static let pause: Duration = .seconds(10)

    let pool: PostgresConnectionPool
    let catalog: ExperimentCatalog
    let logger: Logger

    public init(pool: PostgresConnectionPool, catalog: ExperimentCatalog, logger: Logger) {
        self.pool = pool
        self.catalog = catalog
        self.logger = logger
    }

    /// One round: catches the tally up, then checks every guarded running experiment whose
    /// check is due (last checked `dueAfter` ago or never), one transaction each; returns the
    /// experiments it stopped. Tests call it directly with `dueAfter: .zero`.
    @discardableResult
    public func checkDue(dueAfter: Duration = ExperimentGuardian.checkEvery) async throws -> [(appID: UUID, key: String)] {
        try await ExperimentTally(pool: pool, logger: logger).catchUp()
        let milliseconds = dueAfter.components.seconds * 1000 + dueAfter.components.attoseconds / 1_000_000_000_000_000
        // The round's start: an experiment checked in this round is not due again within it.
        let start = try await pool.query("SELECT clock_timestamp()").first?.decode(0, as: Date.self) ?? Date()
        var stopped: [(appID: UUID, key: String)] = []
        while true {
            let checked = try await pool.transaction { connection in
                try Self.checkNext(dueAfterMilliseconds: milliseconds, roundStart: start, on: connection)
            }
            guard let checked else { break }
            if checked.gaveWay {
                try await Task.sleep(for: .milliseconds(20))
                continue
            }
            if let breach = checked.breach {
                catalog.invalidate(checked.appID)
                stopped.append((checked.appID, checked.key))
                logger.info("experiment stopped by its guard", metadata: [
                    "app": "\(checked.appID.lowercasedText)", "experiment": "\(checked.key)", "variant": "\(breach.variant)",
                    "controlRate": "\(breach.controlRate)", "variantRate": "\(breach.variantRate)", "p": "\(breach.p)",
                ])
            }
        }
        return stopped
    }

    /// What one check did.
    struct Check: Sendable {
        var appID: UUID
        var key: String
        /// What stopped it; nil when it goes on.
        var breach: ExperimentGuard.Breach?
        /// An operator was changing the app's experiments: the check is taken again shortly.
        var gaveWay = false
    }

    /// Takes the guarded running experiment due longest ago (skipping those another server
    /// holds), records the check, and stops it when its guard finds a breach. Nil when none is
    /// due.
    static func checkNext(dueAfterMilliseconds: Int64, roundStart: Date, on connection: PostgresConnection) throws -> Check? {
        guard let row = try connection.query(
            """
            SELECT app_id, key FROM experiments
            WHERE state = 'running' AND jsonb_typeof(definition->'guard') = 'object'
              AND (guard_checked_at IS NULL
                   OR (guard_checked_at < \(roundStart) AND guard_checked_at <= now() - \(dueAfterMilliseconds) * interval '1 millisecond'))
            ORDER BY guard_checked_at NULLS FIRST, app_id, key
            LIMIT 1
            FOR NO KEY UPDATE SKIP LOCKED
            """
        ).first else { return nil }
        let appID: UUID = try row.decode(0)
        let key: String = try row.decode(1)
        let checked = "UPDATE experiments SET guard_checked_at = clock_timestamp() WHERE app_id = \(appID) AND key = \(key)" as PostgresQuery
        guard let experiment = try ExperimentCatalog.readForUpdate(appID: appID, key: key, on: connection),
              let stopGuard = experiment.definition.guard
        else {
            try connection.query(checked)
            return Check(appID: appID, key: key, breach: nil)
        }
        let counts = try ExperimentCounts.read(appID: appID, key: key, on: connection)
        let definition = experiment.definition
        let control = counts.first { $0.variant == definition.control } ?? VariantCounts(variant: definition.control)
        let variants = definition.variants.map { variant in counts.first { $0.variant == variant.key } ?? VariantCounts(variant: variant.key) }
        guard let breach = stopGuard.breach(control: control, variants: variants) else {
            try connection.query(checked)
            return Check(appID: appID, key: key, breach: nil)
        }
        // Every change of the app's experiments holds the catalog's lock, and an operator's
        // stop takes it before the row: the guard, holding the row, only tries it. When an
        // operator holds it (waiting for this row), the guard gives way: it records nothing,
        // and its next look finds the experiment stopped, or takes the lock.
        guard try connection.query(
            "SELECT pg_try_advisory_xact_lock(hashtextextended(\(appID.uuidString), 1))"
        ).first?.decode(0, as: Bool.self) == true else {
            return Check(appID: appID, key: key, breach: nil, gaveWay: true)
        }
        try connection.query(checked)
        _ = try ExperimentCatalog.stop(
            experiment, appID: appID, winner: nil, reason: .guard, actor: .guard,
            details: [
                "variant": .string(breach.variant), "controlRate": .number(breach.controlRate),
                "variantRate": .number(breach.variantRate), "p": .number(breach.p),
            ],
            on: connection)
        return Check(appID: appID, key: key, breach: breach)
    }

    public func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do {
                    try await self.checkDue()
                } catch where Task.isCancelled {
                    break  // shutting down
                } catch {
                    self.logger.warning("experiment guard failed; retrying", metadata: ["error": "\(String(reflecting: error))"])
                }
                try? await Task.sleep(for: Self.pause)
            }
        }
    }
}
