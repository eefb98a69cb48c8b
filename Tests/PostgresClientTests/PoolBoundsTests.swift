import Foundation
import LocationGateTestSupport
import PostgresClient
import Testing

/// The client refuses what it cannot send faithfully, keeps transactions straight when COMMIT
/// fails, and the pool is bounded and heals by itself.
@Suite("PostgreSQL client: refusals, failed commits, bounded and self-healing pool", .timeLimit(.minutes(2)))
struct PoolBoundsTests {
    @Test("A NUL byte in a text bind is refused loudly (invalidParameter), never stored cut short")
    func nulRefused() async throws {
        let pool = try await TestDatabase.pool(size: 1)
        try await pool.query("CREATE TEMP TABLE IF NOT EXISTS nul_test (t text)")
        await #expect {
            try await pool.withConnection { connection in
                try connection.query("CREATE TEMP TABLE IF NOT EXISTS nul_test (t text)")
                try connection.query("INSERT INTO nul_test VALUES (\("abc\u{0}def"))")
            }
        } throws: { error in
            (error as? PostgresError)?.code == .invalidParameter
        }
        let stored = try await pool.withConnection { connection in
            try connection.query("CREATE TEMP TABLE IF NOT EXISTS nul_test (t text)")
            return try connection.query("SELECT count(*) FROM nul_test").first?.decode(0, as: Int.self)
        }
        #expect(stored == 0)
        await pool.close()
    }

    @Test("A COMMIT that fails (a deferred constraint) ends the transaction once; the connection goes on with correct nesting")
    func failedCommit() async throws {
        let pool = try await TestDatabase.pool(size: 1)
        try await pool.withConnection { connection in
            try connection.execute(
                "CREATE TEMP TABLE deferred_test (k int UNIQUE DEFERRABLE INITIALLY DEFERRED)")
            #expect(throws: PostgresError.self) {
                try connection.transaction { connection in
                    try connection.query("INSERT INTO deferred_test VALUES (1), (1)")
                }
            }
            #expect(!connection.isBroken)
            // A new transaction with a savepoint inside works: the depth was not decremented twice.
            try connection.transaction { connection in
                try connection.query("INSERT INTO deferred_test VALUES (2)")
                try? connection.transaction { connection in
                    try connection.query("INSERT INTO deferred_test VALUES (3)")
                    throw PostgresError(.server, message: "roll the savepoint back")
                }
            }
            let rows = try connection.query("SELECT array_agg(k ORDER BY k)::text FROM deferred_test")
            #expect(try rows.first?.decode(0, as: String.self) == "{2}")
        }
        await pool.close()
    }

    /// Holds `pool`'s only connection until the returned latch is raised; returns once it is held.
    static func holdOnly(_ pool: PostgresConnectionPool) async throws -> (release: TestLatch, holder: Task<Void, any Error>) {
        let holding = TestLatch()
        let release = TestLatch()
        let holder = Task {
            try await pool.withConnection { connection in
                try connection.query("SELECT 1")
                holding.raise()
                release.block()
            }
        }
        #expect(try await waitUntil { holding.isRaised })
        return (release, holder)
    }

    @Test("The waiting line is bounded and each wait is timed: poolExhausted at once beyond it, and after the timeout within it")
    func boundedWaiting() async throws {
        // A line of one whose wait is far longer than the test: whatever the machine's load, the
        // waiter is still in line when the next caller comes.
        let bounded = PostgresConnectionPool(
            configuration: try await TestDatabase.configuration(), size: 1, maxWaiters: 1, waitTimeout: .seconds(60),
            logger: TestDatabase.logger)
        let held = try await Self.holdOnly(bounded)
        defer { held.release.raise() }
        let waiter = Task { try await bounded.query("SELECT 1").first?.decode(0, as: Int.self) }
        #expect(try await waitUntil { bounded.waiting == 1 })
        // Beyond the line: refused at once because the line is full (a caller that had waited
        // would be refused for its timeout instead), and it never joined the line.
        await #expect {
            try await bounded.query("SELECT 1")
        } throws: { error in
            guard let error = error as? PostgresError else { return false }
            return error.code == .poolExhausted && error.message.contains("already waiting")
        }
        #expect(bounded.waiting == 1)
        held.release.raise()
        #expect(try await waiter.value == 1, "the waiter gets the connection once it is free")
        try await held.holder.value
        await bounded.close()

        // Within the line, the wait is timed: with the connection held throughout, the waiter is
        // refused once waitTimeout has passed, never before.
        let timed = PostgresConnectionPool(
            configuration: try await TestDatabase.configuration(), size: 1, maxWaiters: 1, waitTimeout: .milliseconds(300),
            logger: TestDatabase.logger)
        let busy = try await Self.holdOnly(timed)
        defer { busy.release.raise() }
        let clock = ContinuousClock()
        let start = clock.now
        await #expect {
            try await timed.query("SELECT 1")
        } throws: { error in
            guard let error = error as? PostgresError else { return false }
            return error.code == .poolExhausted && error.message.contains("no connection became free")
        }
        let waited = clock.now - start
        #expect(waited >= .milliseconds(250), "refused after \(waited), before its timeout")
        #expect(timed.waiting == 0)
        busy.release.raise()
        try await busy.holder.value
        #expect(try await timed.query("SELECT 1").first?.decode(0, as: Int.self) == 1)
        await timed.close()
    }

    @Test("Connections the server terminated while idle are replaced when handed out")
    func heals() async throws {
        let name = "locgate-heal-\(UUID().uuidString.prefix(8))"
        var configuration = try await TestDatabase.configuration()
        configuration.applicationName = name
        let pool = PostgresConnectionPool(configuration: configuration, size: 3, logger: TestDatabase.logger)
        let killer = try await TestDatabase.pool(size: 1)
        // Open three connections: three leases held at once, until all three are.
        let release = TestLatch()
        defer { release.raise() }
        let opened = (0..<3).map { _ in TestLatch() }
        let holders = opened.map { latch in
            Task {
                try await pool.withConnection { connection in
                    try connection.query("SELECT 1")
                    latch.raise()
                    release.block()
                }
            }
        }
        #expect(try await waitUntil { opened.allSatisfy { $0.isRaised } })
        release.raise()
        for holder in holders { try await holder.value }
        let killed = try await killer.query(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = \(name)")
        #expect(try killed.first?.decode(0, as: Int.self) == 3)
        // The backends are gone (terminating one only signals it) before the pool hands them out.
        #expect(try await waitUntil {
            try await killer.query("SELECT count(*) FROM pg_stat_activity WHERE application_name = \(name)")
                .first?.decode(0, as: Int.self) == 0
        })
        for _ in 0..<6 {
            #expect(try await pool.query("SELECT 1").first?.decode(0, as: Int.self) == 1)
        }
        await killer.close()
        await pool.close()
    }

    @Test("Errors that mean the database is away are told apart from a request's own faults")
    func classification() {
        #expect(PostgresError(.server, sqlState: "57P01", message: "terminating connection").isUnavailable)
        #expect(PostgresError(.server, sqlState: "53300", message: "too many clients").isUnavailable)
        #expect(PostgresError(.server, sqlState: "25006", message: "read-only transaction").isUnavailable)
        #expect(PostgresError(.connectionFailed, message: "gone").isUnavailable)
        #expect(!PostgresError(.server, sqlState: "22023", message: "bad value").isUnavailable)
        #expect(PostgresError(.server, sqlState: "22023", message: "bad value").isDataFault)
        #expect(PostgresError(.invalidParameter, message: "NUL").isDataFault)
        #expect(!PostgresError(.server, sqlState: "42P01", message: "no table").isDataFault)
    }
}
