import Foundation
import LocationGateTestSupport
import PostgresClient
import Testing

/// The server's pools carry `statement_timeout`, so no request can hold a connection with a
/// statement that runs on and on.
@Suite("statement_timeout on a pool's sessions", .timeLimit(.minutes(1)))
struct StatementTimeoutTests {
    @Test("A statement longer than the timeout is cancelled with 57014; shorter ones run")
    func longStatementCancelled() async throws {
        let configuration = try await TestDatabase.configuration().withStatementTimeout(.milliseconds(300))
        let pool = PostgresConnectionPool(configuration: configuration, size: 1, logger: TestDatabase.logger)
        #expect(try await pool.query("SHOW statement_timeout").first?.decode(0, as: String.self) == "300ms")
        await #expect {
            try await pool.query("SELECT pg_sleep(5)")
        } throws: { error in
            (error as? PostgresError)?.sqlState == "57014"
        }
        #expect(try await pool.query("SELECT 1").count == 1, "the connection is usable after the cancellation")
        await pool.close()
    }
}
