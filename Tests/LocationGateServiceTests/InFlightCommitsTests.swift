import LocationGateService
import LocationGateTestSupport
import PostgresClient
import Testing

/// An analytics request first waits for the writing transactions in flight at its start, so
/// that every append acknowledged before it is readable in global order (and counted).
@Suite("Analytics: the wait for the commits in flight", .timeLimit(.minutes(2)))
struct InFlightCommitsTests {
    @Test("While a transaction that has written stays open, a later commit is not readable and the wait gives up at its patience; once it commits, the wait passes")
    func waitsForWriters() async throws {
        let configuration = try await TestDatabase.create(prefix: "locgate_in_flight")
        let pool = PostgresConnectionPool(configuration: configuration, size: 1, logger: TestDatabase.logger)
        let holder = PostgresConnectionPool(configuration: configuration, size: 1, logger: TestDatabase.logger)
        let rollup = AnalyticsRollup(pool: pool, logger: TestDatabase.logger)
        // Another session has written (it holds a transaction id) and has not committed.
        let began = TestLatch()
        let release = TestLatch()
        defer { release.raise() }
        let held = Task {
            try await holder.transaction { connection in
                try connection.query("SELECT pg_current_xact_id()")
                began.raise()
                release.block()
            }
        }
        #expect(try await waitUntil { began.isRaised })
        // A later writer commits, as an acknowledged append would: it is readable in global
        // order only once the older one ends. (A snapshot's xmax is the newest completed
        // transaction's successor, so without a later commit the open one would lie beyond it.)
        try await pool.query("SELECT pg_current_xact_id()")
        #expect(try await rollup.waitForInFlightCommits(patience: .milliseconds(300)) == false)
        release.raise()
        _ = try await held.value
        // Other tests' writers elsewhere in the cluster may still be running: a long patience.
        #expect(try await rollup.waitForInFlightCommits(patience: .seconds(60)))
        await holder.close()
        await pool.close()
    }
}
