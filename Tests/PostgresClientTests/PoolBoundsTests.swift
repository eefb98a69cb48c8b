import Foundation
import LocationGateTestSupport
import PostgresClient
import Testing

/// The client refuses what it cannot send faithfully, keeps transactions straight when COMMIT
/// fails, and the pool is bounded and heals by itself.
@Suite("PostgreSQL client: refusals, failed commits, bounded and self-healing pool")
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

    @Test("The waiting line is bounded and each wait is timed: poolExhausted at once beyond it, and after the timeout within it")
    func boundedWaiting() async throws {
        let pool = PostgresConnectionPool(
            configuration: try await TestDatabase.configuration(), size: 1, maxWaiters: 1, waitTimeout: .milliseconds(300),
            logger: TestDatabase.logger)
        let holder = Task { try await pool.query("SELECT pg_sleep(1.5)") }
        try await Task.sleep(for: .milliseconds(200))
        let clock = ContinuousClock()
        let waiter = Task {
            let start = clock.now
            do {
                try await pool.query("SELECT 1")
                return (false, clock.now - start)
            } catch {
                return ((error as? PostgresError)?.code == .poolExhausted, clock.now - start)
            }
        }
        try await Task.sleep(for: .milliseconds(50))
        #expect(pool.waiting == 1)
        let start = clock.now
        await #expect {
            try await pool.query("SELECT 1")
        } throws: { error in
            (error as? PostgresError)?.code == .poolExhausted
        }
        #expect(clock.now - start < .milliseconds(100))
        let (timedOut, waited) = await waiter.value
        #expect(timedOut && waited >= .milliseconds(250) && waited < .milliseconds(1200), "\(waited)")
        _ = try await holder.value
        #expect(try await pool.query("SELECT 1").first?.decode(0, as: Int.self) == 1)
        await pool.close()
    }

    @Test("Connections the server terminated while idle are replaced when handed out")
    func heals() async throws {
        let name = "locgate-heal-\(UUID().uuidString.prefix(8))"
        var configuration = try await TestDatabase.configuration()
        configuration.applicationName = name
        let pool = PostgresConnectionPool(configuration: configuration, size: 3, logger: TestDatabase.logger)
        let killer = try await TestDatabase.pool(size: 1)
        // Open three connections.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<3 { group.addTask { try await pool.query("SELECT pg_sleep(0.1)") } }
            try await group.waitForAll()
        }
        let killed = try await killer.query(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = \(name)")
        #expect(try killed.first?.decode(0, as: Int.self) == 3)
        try await Task.sleep(for: .milliseconds(100))
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
