import LocationGateTestKit
import Synchronization
import Testing
@testable import LocationGateHTTP

/// `/readyz` and `/metrics` read the database through `CachedReading`: a flood of requests
/// costs one reading per interval, not one per request.
@Suite("CachedReading: one database reading per interval", .timeLimit(.minutes(1)))
struct CachedReadingTests {
    @Test("200 concurrent askers share one reading; the clock past the interval reads again; a failure is kept for the interval")
    func oneReadingPerInterval() async throws {
        let clock = ManualClock()
        let reads = Mutex(0)
        let failing = Mutex(false)
        struct Down: Error {}
        let reading = CachedReading(interval: .seconds(1), clock: clock) { () -> Int in
            let count = reads.withLock { $0 += 1; return $0 }
            if failing.withLock({ $0 }) { throw Down() }
            return count
        }
        let values = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<200 { group.addTask { try await reading.value() } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(values.allSatisfy { $0 == 1 } && reads.withLock { $0 } == 1)
        clock.advance(by: .milliseconds(900))
        #expect(try await reading.value() == 1)
        clock.advance(by: .milliseconds(200))
        #expect(try await reading.value() == 2)
        failing.withLock { $0 = true }
        clock.advance(by: .seconds(2))
        await #expect(throws: Down.self) { try await reading.value() }
        await #expect(throws: Down.self) { try await reading.value() }
        #expect(reads.withLock { $0 } == 3, "a failure is remembered for the interval too")
    }
}
