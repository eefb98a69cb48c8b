import Foundation
import LocationGateTestSupport
import PostgresClient
import Synchronization
import Testing

@Suite("PostgreSQL client over libpq (real server)", .timeLimit(.minutes(2)))
struct PostgresConnectionTests {
    @Test("Interpolated values are sent as binds and come back with their types")
    func bindsRoundTrip() async throws {
        let pool = try await TestDatabase.pool(size: 1)
        let id = UUID()
        let date = Date(timeIntervalSince1970: 1_795_341_600.123456)
        let row = try await pool.query(
            """
            SELECT \("it's"), \(Int64(42)), \(true), \(2.5), \(id), \(date), \(Optional<String>.none),
                   \(PostgresJSON(#"{"a": [1, "x"]}"#))::text, \(PostgresArray(["a\"b", "c\\d", "e,f"]))
            """
        ).first
        let first = try #require(row)
        #expect(try first.decode(0, as: String.self) == "it's")
        #expect(try first.decode(1, as: Int64.self) == 42)
        #expect(try first.decode(2, as: Bool.self))
        #expect(try first.decode(3, as: Double.self) == 2.5)
        #expect(try first.decode(4, as: UUID.self) == id)
        #expect(abs(try first.decode(5, as: Date.self).timeIntervalSince(date)) < 0.000_001)
        #expect(try first.decodeIfPresent(6, as: String.self) == nil)
        #expect(try first.decode(7, as: String.self) == #"{"a": [1, "x"]}"#)
        #expect(try first.decode(8, as: String.self) == #"{"a\"b","c\\d","e,f"}"#)
        await pool.close()
    }

    @Test("Array elements come back from unnest as they were: quotes and backslashes at the edges, in runs, none; empty; NULL; not ASCII")
    func arrayElementsRoundTrip() async throws {
        let pool = try await TestDatabase.pool(size: 1)
        let elements: [String?] = [
            "\"", "\\", "\"\"\\", "a\"", "\"a", "a\\\\b\"\"c", "", nil, "plain", #"{"state": "foreground"}"#, "café \"ü\"", "NULL",
        ]
        let rows = try await pool.query(
            "SELECT e FROM unnest(\(PostgresArray(elements, typeOID: PostgresType.textArray))) WITH ORDINALITY AS t(e, n) ORDER BY n")
        #expect(try rows.map { try $0.decodeIfPresent(0, as: String.self) } == elements)
        await pool.close()
    }

    @Test("A value is never SQL: an injection attempt is stored as text")
    func injectionIsInert() async throws {
        let pool = try await TestDatabase.pool(size: 1)
        let hostile = "x'); DROP TABLE apps; --"
        let rows = try await pool.query("SELECT \(hostile) = \(hostile), length(\(hostile))")
        #expect(try rows.first?.decode(0, as: Bool.self) == true)
        let still = try await pool.query("SELECT to_regclass('apps') IS NOT NULL")
        #expect(try still.first?.decode(0, as: Bool.self) == true)
        await pool.close()
    }

    @Test("Errors carry SQLSTATE, constraint and a safe description")
    func typedErrors() async throws {
        let pool = try await TestDatabase.pool(size: 1)
        let id = UUID()
        try await pool.query("INSERT INTO apps (id, name) VALUES (\(id), 'a')")
        do {
            try await pool.query("INSERT INTO apps (id, name) VALUES (\(id), 'b')")
            Issue.record("expected a unique violation")
        } catch let error as PostgresError {
            #expect(error.isUniqueViolation && error.constraint == "apps_pkey" && error.code == .server)
            #expect(!error.description.contains("apps_pkey"), "description is safe to show")
            #expect(error.debugDescription.contains("23505"))
        }
        await #expect(throws: PostgresError.self) { try await pool.query("SELEC 1") }
        // The connection is usable after an error.
        #expect(try await pool.query("SELECT 1").count == 1)
        await pool.close()
    }

    @Test("Transactions commit on return and roll back on throw")
    func transactions() async throws {
        struct Abort: Error {}
        let pool = try await TestDatabase.pool(size: 1)
        let kept = UUID()
        let dropped = UUID()
        try await pool.transaction { connection in
            try connection.query("INSERT INTO apps (id, name) VALUES (\(kept), 'kept')")
        }
        await #expect(throws: Abort.self) {
            try await pool.transaction { connection in
                try connection.query("INSERT INTO apps (id, name) VALUES (\(dropped), 'dropped')")
                throw Abort()
            }
        }
        let rows = try await pool.query("SELECT count(*) FROM apps WHERE id IN (\(kept), \(dropped))")
        #expect(try rows.first?.decode(0, as: Int.self) == 1)
        await pool.close()
    }

    @Test("The pool gives each lease a connection of its own, on a pool thread, never more than its size")
    func exclusiveLeases() async throws {
        let pool = try await TestDatabase.pool(size: 3)
        let tracker = LeaseTracker()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<40 {
                group.addTask {
                    try await pool.withConnection { connection in
                        let pid = try connection.query("SELECT pg_backend_pid()").first?.decode(0, as: Int.self) ?? -1
                        let fresh = tracker.begin(pid)
                        #expect(fresh, "connection \(pid) leased twice at once")
                        try connection.query("SELECT pg_sleep(0.01)")
                        tracker.end(pid)
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(tracker.peak <= 3)
        #expect(tracker.threadNames.allSatisfy { $0.hasPrefix("TP-") }, "libpq ran off the thread pool: \(tracker.threadNames)")
        await pool.close()
    }

    @Test("An unreachable server is a connectionFailed error, for every waiter")
    func unreachable() async throws {
        let configuration = PostgresConfiguration(connectionString: "postgresql://nobody@127.0.0.1:1/none?connect_timeout=2")
        let pool = PostgresConnectionPool(configuration: configuration, size: 1, logger: TestDatabase.logger)
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<3 {
                group.addTask {
                    do {
                        try await pool.query("SELECT 1")
                        Issue.record("expected a connection failure")
                    } catch let error as PostgresError {
                        #expect(error.code == .connectionFailed)
                    } catch {
                        Issue.record("unexpected \(error)")
                    }
                }
            }
        }
        await pool.close()
    }

    @Test("LISTEN/NOTIFY delivers notifications on a connection of its own")
    func listenNotify() async throws {
        let configuration = try await TestDatabase.configuration()
        let pool = try await TestDatabase.pool(size: 1)
        let channel = "test_\(UUID().uuidString.prefix(8).lowercased())"
        let (ready, readyContinuation) = AsyncStream<Void>.makeStream()
        let notifications = PostgresListener.notifications(
            configuration: configuration, channels: [channel], logger: TestDatabase.logger,
            onListening: { readyContinuation.yield() })
        var readyIterator = ready.makeAsyncIterator()
        _ = await readyIterator.next()
        try await pool.query("SELECT pg_notify(\(channel), 'one'), pg_notify(\(channel), 'two')")
        var received: [String] = []
        for try await notification in notifications {
            #expect(notification.channel == channel)
            received.append(notification.payload)
            if received.count == 2 { break }
        }
        #expect(received == ["one", "two"])
        await pool.close()
    }

    @Test("A listener drops the notifications its filter matches (channel and payload prefix) and delivers every other one in order")
    func listenIgnoring() async throws {
        let configuration = try await TestDatabase.configuration()
        let pool = try await TestDatabase.pool(size: 1)
        let suffix = UUID().uuidString.prefix(8).lowercased()
        let (channel, other) = ("test_\(suffix)", "test_other_\(suffix)")
        let (ready, readyContinuation) = AsyncStream<Void>.makeStream()
        let notifications = PostgresListener.notifications(
            configuration: configuration, channels: [channel, other], logger: TestDatabase.logger,
            ignoring: NotificationFilter(channel: channel, payloadPrefix: Array("#me\n".utf8)),
            onListening: { readyContinuation.yield() })
        var readyIterator = ready.makeAsyncIterator()
        _ = await readyIterator.next()
        // Dropped: the filter's channel with the prefix (alone or followed by more). Delivered:
        // another prefix, a payload shorter than the prefix, an empty one, the prefix on another
        // channel.
        try await pool.query(
            """
            SELECT pg_notify(\(channel), E'#me\\nfirst'), pg_notify(\(channel), E'#you\\nsecond'),
                   pg_notify(\(channel), '#m'), pg_notify(\(channel), ''), pg_notify(\(channel), E'#me\\n'),
                   pg_notify(\(other), E'#me\\nthird'), pg_notify(\(channel), 'last')
            """)
        var received: [String] = []
        for try await notification in notifications {
            received.append("\(notification.channel == channel ? "channel" : "other"):\(notification.payload)")
            if notification.payload == "last" { break }
        }
        #expect(received == ["channel:#you\nsecond", "channel:#m", "channel:", "other:#me\nthird", "channel:last"])
        await pool.close()
    }

    @Test("Prepared statements: reused by text and types, kept across a rollback, and past the cache's size")
    func preparedStatements() async throws {
        let pool = try await TestDatabase.pool(size: 1)
        try await pool.withConnection { connection in try Self.exercisePreparedStatements(connection) }
        await pool.close()
    }

    static func exercisePreparedStatements(_ connection: PostgresConnection) throws {
        struct Abort: Error {}
        do {
            // The same text with a typed and an untyped (NULL) parameter is two statements.
            let text: String? = "x"
            let none: String? = nil
            #expect(try connection.query("SELECT \(text)::text IS NULL").first?.decode(0, as: Bool.self) == false)
            #expect(try connection.query("SELECT \(none)::text IS NULL").first?.decode(0, as: Bool.self) == true)
            for value in 0..<10 {
                #expect(try connection.query("SELECT \(value) + 1").first?.decode(0, as: Int.self) == value + 1)
            }
            // Prepared inside a transaction that rolls back: still usable after it.
            #expect(throws: Abort.self) {
                try connection.transaction { connection in
                    _ = try connection.query("SELECT \(1) * 7 AS prepared_in_rollback")
                    throw Abort()
                }
            }
            #expect(try connection.query("SELECT \(1) * 7 AS prepared_in_rollback").first?.decode(0, as: Int.self) == 7)
            // A failed statement inside a transaction is not left prepared half-way.
            #expect(throws: PostgresError.self) {
                try connection.transaction { connection in
                    _ = try connection.query("SELECT 1 / \(0)")
                }
            }
            #expect(try connection.query("SELECT \(2) / \(1)").first?.decode(0, as: Int.self) == 2)
            // More distinct statements than the cache holds still run.
            for number in 0..<(PostgresConnection.maxPreparedStatements + 20) {
                let sql = PostgresQuery(unsafeSQL: "SELECT $1::int + \(number)", binds: [number.postgresBind])
                #expect(try connection.query(sql).first?.decode(0, as: Int.self) == 2 * number)
            }
        }
    }

    @Test("Timestamps format and parse in the session's ISO/UTC form")
    func timestamps() {
        let samples = [0, 1_795_341_600.5, -86_400.25, 4_102_444_799.999_999]
        for seconds in samples {
            let date = Date(timeIntervalSince1970: seconds)
            let parsed = PostgresTimestamp.parse(PostgresTimestamp.format(date))
            #expect(parsed.map { abs($0.timeIntervalSince(date)) < 0.000_001 } == true, "\(seconds)")
        }
        #expect(PostgresTimestamp.parse("2026-11-22 10:00:00+00") == Date(timeIntervalSince1970: 1_795_341_600))
        #expect(PostgresTimestamp.parse("2026-11-22 11:30:00.5+01:30") == Date(timeIntervalSince1970: 1_795_341_600.5))
        #expect(PostgresTimestamp.parse("yesterday") == nil)
        #expect(PostgresTimestamp.format(Date(timeIntervalSince1970: 1_795_341_600.25)) == "2026-11-22T10:00:00.250000Z")
        #expect(PostgresTimestamp.format(Date(timeIntervalSince1970: -86_400.25)) == "1969-12-30T23:59:59.750000Z")
    }

    @Test("UUID text: the hand-written parser and formatters agree with Foundation and with the server")
    func uuidText() async throws {
        for _ in 0..<500 {
            let uuid = UUID()
            #expect(uuid.lowercasedText == uuid.uuidString.lowercased())
            #expect(uuid.uppercasedText == uuid.uuidString)
            #expect(UUID(postgresUUIDText: uuid.lowercasedText) == uuid)
            #expect(UUID(postgresUUIDText: uuid.uuidString) == uuid)
        }
        for bad in ["", "not-a-uuid", "0123456789abcdef0123456789abcdef", "01234567-89ab-cdef-0123-456789abcdeg",
                    "01234567-89ab-cdef-0123-456789abcdef0", "01234567+89ab-cdef-0123-456789abcdef"] {
            #expect(UUID(postgresUUIDText: bad) == nil, "\(bad)")
        }
        let pool = try await TestDatabase.pool(size: 1)
        let uuid = UUID()
        let row = try await pool.query("SELECT \(uuid)::text, \(uuid.lowercasedText)::uuid").first
        #expect(try row?.decode(0, as: String.self) == uuid.lowercasedText)
        #expect(try row?.decode(1, as: UUID.self) == uuid)
        await pool.close()
    }
}

/// Records which connections are leased at once, and on which threads.
final class LeaseTracker: Sendable {
    private struct State {
        var inUse: Set<Int> = []
        var peak = 0
        var threadNames: Set<String> = []
    }

    private let state = Mutex(State())

    /// Marks a connection leased; false if it already was.
    func begin(_ pid: Int) -> Bool {
        state.withLock { state in
            let fresh = state.inUse.insert(pid).inserted
            state.peak = max(state.peak, state.inUse.count)
            state.threadNames.insert(Thread.current.name ?? "unnamed")
            return fresh
        }
    }

    func end(_ pid: Int) {
        state.withLock { _ = $0.inUse.remove(pid) }
    }

    var peak: Int { state.withLock { $0.peak } }
    var threadNames: Set<String> { state.withLock { $0.threadNames } }
}
