import ArgumentParser
import EventLog
import Foundation
import LocgateCommandSupport
import LocationGateService
import Logging
import PostgresClient

/// `locgate-bench ...`: the in-process halves of the benchmarks (Labs/bench drives the rest,
/// with wrk, pgbench and psql), and the least server of single-event ingest. A lab, kept out
/// of the product's `locgate` binary. Each measurement prints one JSON object: our figure, the
/// baseline measured the same way in the same run, and their ratio.
@main
struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "locgate-bench", abstract: "Measure against same-run baselines (see Labs/bench).",
        subcommands: [AnalyticsBench.self, ReplayBench.self, IngestFloorBench.self, WireFormsBench.self])
}

/// The median of a few timed runs, in milliseconds.
func medianMilliseconds(repeat count: Int, _ body: () async throws -> Void) async throws -> Double {
    var times: [Double] = []
    let clock = ContinuousClock()
    for _ in 0..<count {
        let start = clock.now
        try await body()
        times.append((clock.now - start).seconds * 1000)
    }
    times.sort()
    return times[times.count / 2]
}

struct BenchResult: Encodable {
    var name: String
    var ours: Double
    var baseline: Double
    var unit: String
    /// ours / baseline for rates, baseline / ours for times: above 1 means LocationGate is ahead.
    var ratio: Double
    var detail: String
}

/// Grant rates from the rollups against the plain GROUP BY over the log, on the same data.
struct AnalyticsBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "analytics", abstract: "Grant-rate query: rollups against GROUP BY over the log.")

    @OptionGroup var database: DatabaseOptions
    @Option(help: "The app id") var app: String
    @Option(help: "Timed runs of each query (the median is reported)") var runs = 7

    func validate() throws {
        guard UUID(uuidString: app) != nil else { throw ValidationError("--app must be an app id (a UUID)") }
    }

    func run() async throws {
        guard let appID = UUID(uuidString: app) else { return }
        let runs = self.runs
        let result = try await withPool(database, label: "bench") { pool, logger -> BenchResult in
            try await AnalyticsRollup(pool: pool, logger: logger).catchUp()
            let query = AnalyticsQuery(kind: .prompts, appID: appID)
            var rows = 0
            let ours = try await medianMilliseconds(repeat: runs) {
                rows = try await pool.withConnection { connection in try query.run(on: connection).count }
            }
            let baseline = try await medianMilliseconds(repeat: runs) {
                try await pool.query(
                    """
                    SELECT outcome->'analytics'->>'prompt', data->>'choice', count(*),
                           count(*) FILTER (WHERE (outcome->'analytics'->>'granted')::boolean),
                           count(*) FILTER (WHERE (outcome->'analytics'->>'always')::boolean)
                    FROM events WHERE app_id = \(appID) AND type = 'promptResponded'
                    GROUP BY 1, 2
                    """)
            }
            let events = try await pool.query("SELECT count(*) FROM events WHERE app_id = \(appID)").first?.decode(0, as: Int64.self) ?? 0
            return BenchResult(
                name: "grant-rate query", ours: ours, baseline: baseline, unit: "ms", ratio: baseline / max(ours, 0.001),
                detail: "\(events) events, \(rows) result rows; baseline: GROUP BY over the log")
        }
        try printJSON(result)
    }
}

/// Recomputing every projection from the log against reading the same rows in the same order.
struct ReplayBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "replay", abstract: "Replay: fold the whole log, against reading it.")

    @OptionGroup var database: DatabaseOptions

    func run() async throws {
        let result = try await withPool(database, label: "bench") { pool, logger -> BenchResult in
            let log = EventLog(pool: pool, logger: logger)
            let clock = ContinuousClock()
            let start = clock.now
            let projection = try await Replay(pool: pool, logger: logger).recompute()
            let seconds = (clock.now - start).seconds
            let rate = Double(projection.events) / max(seconds, 0.001)
            // The baseline: the same rows, same order, through the same client, not folded.
            let readStart = clock.now
            var read = 0
            var position = LogPosition.start
            while true {
                let page = try await log.read(after: position, limit: 10_000)
                read += page.count
                guard let last = page.last, page.count == 10_000 else { break }
                position = last.logPosition
            }
            let readRate = Double(read) / max((clock.now - readStart).seconds, 0.001)
            return BenchResult(
                name: "replay (in-process)", ours: rate.rounded(), baseline: readRate.rounded(), unit: "events/s",
                ratio: rate / max(readRate, 1),
                detail: "\(projection.events) events, \(projection.devices.count) devices; baseline: the paged ordered read alone")
        }
        try printJSON(result)
    }
}
