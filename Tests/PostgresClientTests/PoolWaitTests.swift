import Foundation
import LocationGateTestSupport
import PostgresClient
import Synchronization
import Testing

/// The pool's waiting line on a manual clock: a waiter's timeout is the clock's time, so the
/// test moves the clock instead of sleeping, and holds whatever the machine's load.
@Suite("Pool: a waiter's timeout on an injected clock", .timeLimit(.minutes(1)))
struct PoolWaitTests {
    @Test("A waiter is refused poolExhausted once waitTimeout of the clock's time has passed, not before")
    func waiterExpiresOnTheClock() async throws {
        let clock = ManualClock()
        let pool = PostgresConnectionPool(
            configuration: try await TestDatabase.configuration(), size: 1, maxWaiters: 4, waitTimeout: .seconds(2),
            clock: clock, logger: TestDatabase.logger)
        defer { Task { await pool.close() } }
        // The only connection is held until the test lets it go.
        let release = DispatchSemaphore(value: 0)
        let holding = Mutex(false)
        let holder = Task {
            try await pool.withConnection { connection in
                try connection.query("SELECT 1")
                holding.withLock { $0 = true }
                release.wait()
            }
        }
        #expect(try await waitUntil { holding.withLock { $0 } })
        let waiter = Task { () -> PostgresError.Code? in
            do {
                try await pool.query("SELECT 1")
                return nil
            } catch {
                return (error as? PostgresError)?.code
            }
        }
        // The waiter is queued and its timeout is sleeping on the clock.
        #expect(try await waitUntil { pool.waiting == 1 && clock.sleepers == 1 })
        clock.advance(by: .milliseconds(1_900))
        // Not yet due: the timeout still sleeps and the waiter still waits.
        #expect(clock.sleepers == 1 && pool.waiting == 1)
        clock.advance(by: .milliseconds(200))
        #expect(await waiter.value == .poolExhausted)
        #expect(pool.waiting == 0)
        release.signal()
        try await holder.value
    }

    @Test("A waiter served before its timeout gets the connection, and its timeout stops sleeping")
    func servedWaiterCancelsItsTimeout() async throws {
        let clock = ManualClock()
        let pool = PostgresConnectionPool(
            configuration: try await TestDatabase.configuration(), size: 1, maxWaiters: 4, waitTimeout: .seconds(2),
            clock: clock, logger: TestDatabase.logger)
        defer { Task { await pool.close() } }
        let release = DispatchSemaphore(value: 0)
        let holding = Mutex(false)
        let holder = Task {
            try await pool.withConnection { connection in
                holding.withLock { $0 = true }
                release.wait()
            }
        }
        #expect(try await waitUntil { holding.withLock { $0 } })
        let waiter = Task { try await pool.query("SELECT 41 + 1").first?.decode(0, as: Int64.self) }
        #expect(try await waitUntil { pool.waiting == 1 && clock.sleepers == 1 })
        release.signal()
        #expect(try await waiter.value == 42)
        #expect(try await waitUntil { clock.sleepers == 0 }, "the served waiter's timeout was cancelled")
        // Moving the clock past the timeout now refuses nobody.
        clock.advance(by: .seconds(5))
        #expect(try await pool.query("SELECT 1").count == 1)
        try await holder.value
    }
}
