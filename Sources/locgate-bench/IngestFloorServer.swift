import ArgumentParser
import Dispatch
import EventLog
import Foundation
import LocgateCommandSupport
import Hummingbird
import Logging
import PostgresClient
import Synchronization

/// `locgate bench ingest-floor`: the least a server can do for single-event ingest on this
/// stack, as a yardstick for `locgate serve` (Labs/ingest-cpu runs both under the same wrk).
///
/// It answers `POST /v1/events` only after the request's rows are durable, as `serve` does, with
/// the same parts: Hummingbird, our libpq client and its thread pool, and one group commit at a
/// time. It does nothing else: no authentication, no decoding (the body is read and dropped), no
/// rules and no cache. Each group writes the rows an event needs (an event row into
/// `bench_events` (or `--events-table`), a device state into `floor_states`, a stream head into `floor_streams`, the
/// tables `Labs/ingest-cpu` makes) in one round trip. So no design of the service on
/// Hummingbird and libpq can ingest faster here: what it reaches against pgbench is the ceiling
/// of the ratio, and `serve`'s rate over it is how much of that ceiling we use. With `--reads`
/// it also does the database work the API's promises need (locks, the idempotency probe, the
/// versions and states read, a NOTIFY), in its cheapest form: the ceiling for any design that
/// keeps those promises by reading the database.
struct IngestFloorBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ingest-floor",
        abstract: "Serve POST /v1/events doing only a durable group commit of an event's rows (a yardstick for Labs/ingest-cpu).")

    @OptionGroup var database: DatabaseOptions
    @Option(help: "Port to listen on (127.0.0.1)") var port = 8090
    @Option(help: "The stored outcome each event row carries (JSON)") var outcome = #"{"analytics": {}}"#
    @Option(help: "The device state each state row carries (JSON)") var state = #"{"status": "notDetermined"}"#
    @Option(help: "The table of the event rows (shaped like a partition of `events`; `bench_events` is pgbench's)")
    var eventsTable = "bench_events"
    @Option(help: "Group commits in flight at once") var groups = 1
    @Option(help: "Rows per event: 1 the event (pgbench's row), 2 and its device state, 3 and its stream head") var rows = 3
    @Option(help: "Round trips per group: 1, or more with a `SELECT 1` answered before the writes for each extra (serve's groups take 4)")
    var roundTrips = 1
    @Flag(help: "Also do the database work the API's promises need, in its cheapest form: lock the streams, probe the event ids, read the streams' versions and states (all in the first round trip), and NOTIFY")
    var reads = false

    func validate() throws {
        guard (1...3).contains(rows) else { throw ValidationError("--rows is 1, 2 or 3") }
        guard !eventsTable.isEmpty, eventsTable.utf8.allSatisfy({ (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0) || $0 == UInt8(ascii: "_") }) else {
            throw ValidationError("--events-table is a table name of lower-case letters and underscores")
        }
        guard (1...16).contains(groups) else { throw ValidationError("--groups is 1 to 16") }
        guard (1...8).contains(roundTrips) else { throw ValidationError("--round-trips is 1 to 8") }
        guard !reads || roundTrips == 1 else { throw ValidationError("--reads makes its own two round trips: leave out --round-trips") }
    }

    func run() async throws {
        try await CommandFailure.reporting {
            CommandLogging.bootstrap(level: database.level)
            let logger = Logger(label: "locgate.ingest-floor")
            let pool = try database.makePool(size: max(2, self.groups), logger: logger)
            let groups = FloorGroupCommitter(
                pool: pool, eventsTable: eventsTable, outcome: outcome, state: state, rows: rows, roundTrips: roundTrips, reads: reads,
                maxDrainers: self.groups)
            // A group up front: a missing table or a bad JSON option fails here, not per request.
            try await pool.withConnection { connection in try groups.write(count: 1, on: connection) }
            let router = Router()
            router.post("/v1/events") { request, _ -> Response in
                var request = request
                _ = try await request.collectBody(upTo: 64 * 1024)
                let position = try await groups.append()
                var body = ByteBuffer()
                body.writeString(#"{"results":[{"index":0,"status":"appended","version":1,"position":\#(position)}]}"#)
                return Response(status: .created, headers: [.contentType: "application/json"], body: .init(byteBuffer: body))
            }
            // Its groups' counters, as `serve`'s /metrics has them: commits, their events, the
            // groups' microseconds and of them those spent waiting for PostgreSQL's answers.
            router.get("/counters") { _, _ -> String in
                let counted = groups.counted
                return "\(counted.commits) \(counted.events) \(counted.microseconds) \(counted.databaseMicroseconds)\n"
            }
            let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: port)), logger: logger)
            try await app.runService()
            await pool.close()
        }
    }
}

/// Group commit, one group at a time by default like `serve`'s: requests queue, a drainer
/// writes what is queued in one transaction and answers each after it commits, its groups one
/// after another on one pool thread and connection, as `serve`'s drainer runs them. With more than
/// one in flight, a request that finds every running drainer busy starts another.
final class FloorGroupCommitter: Sendable {
    private struct State {
        var waiting: [CheckedContinuation<Int64, any Error>] = []
        var drainers = 0
    }

    private let pool: PostgresConnectionPool
    /// The event rows' table: `bench_events` (pgbench's), or one of the bench's own.
    private let eventsTable: String
    private let outcome: String
    private let state: String
    private let queue = Mutex(State())
    /// What `counted` returns.
    struct Counted {
        var commits = 0
        var events = 0
        var microseconds: UInt64 = 0
        var databaseMicroseconds: UInt64 = 0
    }
    private let counters = Mutex(Counted())
    /// The groups committed so far, their events, their time and of it the database's.
    var counted: Counted { counters.withLock { $0 } }
    private let maxDrainers: Int
    private let rows: Int
    private let roundTrips: Int
    private let reads: Bool
    /// Beyond this many waiting requests, more are refused at once (the benchmark keeps 64 open).
    private let maxWaiting = 10_000
    /// The app every row belongs to (`Labs/ingest-cpu` creates it), and the same as SQL.
    private static let appID = UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1))
    private static let app = "'\(appID.lowercasedText)'"

    init(
        pool: PostgresConnectionPool, eventsTable: String, outcome: String, state: String, rows: Int, roundTrips: Int, reads: Bool,
        maxDrainers: Int
    ) {
        self.pool = pool
        self.eventsTable = eventsTable
        self.reads = reads
        self.rows = rows
        self.roundTrips = roundTrips
        self.maxDrainers = maxDrainers
        self.outcome = outcome
        self.state = state
    }

    /// Returns when this request's rows are durable: the number of rows its group wrote.
    func append() async throws -> Int64 {
        try await withCheckedThrowingContinuation { continuation in
            enum Admission { case refuse, queued, drain }
            let admission = queue.withLock { state -> Admission in
                guard state.waiting.count < maxWaiting else { return .refuse }
                state.waiting.append(continuation)
                guard state.drainers < maxDrainers else { return .queued }
                state.drainers += 1
                return .drain
            }
            switch admission {
            case .refuse: continuation.resume(throwing: HTTPError(.serviceUnavailable, message: "too many requests waiting"))
            case .queued: break
            case .drain: Task { await self.drain() }
            }
        }
    }

    /// Groups follow one another on one pool thread and connection, as `serve`'s drainer runs
    /// them: each group's requests are answered from there and the next group starts at once.
    private func drain() async {
        var group = take()
        while !group.isEmpty {
            let first = group
            do {
                group = try await pool.withConnection { connection in self.commitGroups(first: first, on: connection) }
            } catch {
                for continuation in first { continuation.resume(throwing: error) }
                group = take()
            }
        }
    }

    /// What is queued, as the next group; empty (and the drainer gone) when nothing is.
    private func take() -> [CheckedContinuation<Int64, any Error>] {
        queue.withLock { state in
            let group = state.waiting
            state.waiting = []
            if group.isEmpty { state.drainers -= 1 }
            return group
        }
    }

    /// Writes `first` and the groups after it on `connection` until the queue is empty (an
    /// empty group returned) or the connection broke (the group to write next returned).
    private func commitGroups(
        first: [CheckedContinuation<Int64, any Error>], on connection: PostgresConnection
    ) -> [CheckedContinuation<Int64, any Error>] {
        var group = first
        while true {
            do {
                let started = DispatchTime.now().uptimeNanoseconds
                let waited = connection.waitingNanoseconds
                try write(count: group.count, on: connection)
                let microseconds = (DispatchTime.now().uptimeNanoseconds &- started) / 1000
                let database = (connection.waitingNanoseconds &- waited) / 1000
                counters.withLock { counted in
                    counted.commits += 1
                    counted.events += group.count
                    counted.microseconds += microseconds
                    counted.databaseMicroseconds += database
                }
                for continuation in group { continuation.resume(returning: Int64(group.count)) }
            } catch {
                for continuation in group { continuation.resume(throwing: error) }
            }
            group = take()
            if group.isEmpty || connection.isBroken { return group }
        }
    }

    /// One transaction, one round trip (unless `roundTrips` asks for more, or `reads` needs a
    /// second): BEGIN, the inserts and COMMIT in one pipeline.
    func write(count: Int, on connection: PostgresConnection) throws {
        if reads { return try writeWithReads(count: count, on: connection) }
        let (count, outcome, state, rows, roundTrips, eventsTable) = (Int64(count), outcome, state, rows, roundTrips, eventsTable)
        try connection.transaction { connection in
            for _ in 1..<roundTrips { try connection.query("SELECT 1") }
            try connection.send("""
                INSERT INTO \(unescaped: eventsTable) (app_id, user_id, device_id, version, event_id, type, data, occurred_at, outcome)
                SELECT \(unescaped: Self.app), 'floor', gen_random_uuid()::text, 1, gen_random_uuid(),
                       'appStateChanged', '{"state": "foreground"}', now(), \(outcome)::jsonb
                FROM generate_series(1, \(count))
                """)
            guard rows > 1 else { return }
            try connection.send("""
                INSERT INTO floor_states (app_id, user_id, device_id, version, state, status, provisional, milestones)
                SELECT \(unescaped: Self.app), 'floor', gen_random_uuid()::text, 1, \(state)::jsonb,
                       'notDetermined', false, 0
                FROM generate_series(1, \(count))
                """)
            guard rows > 2 else { return }
            try connection.send("""
                INSERT INTO floor_streams (app_id, user_id, device_id, version)
                SELECT \(unescaped: Self.app), 'floor', gen_random_uuid()::text, 1
                FROM generate_series(1, \(count))
                """)
        }
    }

    /// The same rows with ids made here, after the reads a real append makes, each in the form
    /// `serve` uses (a LATERAL probe of a unique index per key), all answered in one round trip
    /// before the writes, each row's JSON bound as an element of an array as `serve` binds it;
    /// and one NOTIFY. The reads' answers are not used: every id is new.
    private func writeWithReads(count: Int, on connection: PostgresConnection) throws {
        let (outcome, state, rows, eventsTable) = (outcome, state, rows, eventsTable)
        let ids = (0..<count).map { _ in UUID() }
        let devices = ids.map { "d-\($0.uuidString.lowercased())" }
        // Each row's JSON bound as its own array element, as a real server binds each event's
        // data, outcome and state (PostgreSQL parses every one at Bind): one value per group
        // bound once would spare the database work no real server is spared.
        let data = Array(repeating: #"{"state": "foreground"}"#, count: count)
        let outcomes = Array(repeating: outcome, count: count)
        let states = Array(repeating: state, count: count)
        let streams = devices.map { StreamKey(appID: Self.appID, userID: "floor", deviceID: $0) }
        try connection.transaction { connection in
            try EventLog.lock(streams, on: connection)
            try connection.send("""
                SELECT e.event_id FROM unnest(\(PostgresArray(ids))) AS i(id)
                CROSS JOIN LATERAL (
                    SELECT event_id FROM \(unescaped: eventsTable)
                    WHERE app_id = (SELECT \(unescaped: Self.app)::uuid) AND event_id = i.id OFFSET 0) AS e
                """)
            try connection.send("""
                SELECT s.version FROM unnest(\(PostgresArray(devices))) AS d(id)
                CROSS JOIN LATERAL (
                    SELECT version FROM floor_streams
                    WHERE app_id = \(unescaped: Self.app) AND user_id = 'floor' AND device_id = d.id OFFSET 0) AS s
                """)
            try connection.query("""
                SELECT s.state FROM unnest(\(PostgresArray(devices))) AS d(id)
                CROSS JOIN LATERAL (
                    SELECT state FROM floor_states
                    WHERE app_id = \(unescaped: Self.app) AND user_id = 'floor' AND device_id = d.id OFFSET 0) AS s
                """)
            try connection.send("""
                INSERT INTO \(unescaped: eventsTable) (app_id, user_id, device_id, version, event_id, type, data, occurred_at, outcome)
                SELECT \(unescaped: Self.app), 'floor', d, 1, i, 'appStateChanged', j, now(), o
                FROM unnest(\(PostgresArray(devices)), \(PostgresArray(ids)), \(PostgresArray(json: data)),
                            \(PostgresArray(json: outcomes))) AS b(d, i, j, o)
                """)
            if rows > 1 {
                try connection.send("""
                    INSERT INTO floor_states (app_id, user_id, device_id, version, state, status, provisional, milestones)
                    SELECT \(unescaped: Self.app), 'floor', d, 1, st, 'notDetermined', false, 0
                    FROM unnest(\(PostgresArray(devices)), \(PostgresArray(json: states))) AS b(d, st)
                    """)
            }
            if rows > 2 {
                try connection.send("""
                    INSERT INTO floor_streams (app_id, user_id, device_id, version)
                    SELECT \(unescaped: Self.app), 'floor', d, 1 FROM unnest(\(PostgresArray(devices))) AS b(d)
                    """)
            }
            try connection.send("SELECT pg_notify('locgate_floor', \(String(count)))")
        }
    }
}
