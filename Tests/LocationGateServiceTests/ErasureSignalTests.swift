import LocationGateTestSupport
import Testing
@testable import LocationGateService

/// The erasure worker's wait: it must wake at once for a raise, and never hang past its limit or
/// its task's cancellation. Each wait here has a limit of a minute, far beyond the test's own
/// deadline, so a wait that only ended at its limit fails the test.
@Suite("ErasureSignal", .timeLimit(.minutes(1)))
struct ErasureSignalTests {
    @Test("A new signal counts as raised; take() clears it")
    func startsRaised() {
        let signal = ErasureSignal()
        #expect(signal.take())
        #expect(!signal.take())
        signal.raise()
        #expect(signal.take())
    }

    @Test("A suspended wait ends when the signal is raised, long before its limit")
    func wakesOnRaise() async throws {
        let signal = ErasureSignal()
        _ = signal.take()
        let ended = TestLatch()
        let waiter = Task {
            await signal.wait(upTo: .seconds(60))
            ended.raise()
        }
        #expect(try await waitUntil { signal.hasWaiter })
        #expect(!ended.isRaised)
        signal.raise()
        #expect(try await waitUntil(timeout: .seconds(10)) { ended.isRaised })
        await waiter.value
        #expect(signal.take())
    }

    @Test("A late wake-up of an earlier wait (its limit, its cancellation) does not end the next one")
    func lateWakeIsIgnored() async throws {
        let signal = ErasureSignal()
        _ = signal.take()
        let first = Task { await signal.wait(upTo: .seconds(60)) }
        #expect(try await waitUntil { signal.hasWaiter })
        signal.raise()
        await first.value
        #expect(signal.take())
        let earlier = signal.currentWait

        let ended = TestLatch()
        let second = Task {
            await signal.wait(upTo: .seconds(60))
            ended.raise()
        }
        #expect(try await waitUntil { signal.hasWaiter && signal.currentWait == earlier + 1 })
        // What the first wait's timer would do if it fired now: the second wait stays suspended
        // (wake is synchronous: had it resumed the waiter, there would be none now).
        signal.wake(wait: earlier)
        #expect(signal.hasWaiter)
        #expect(!ended.isRaised)
        // Its own wake-up ends it.
        signal.wake(wait: earlier + 1)
        #expect(try await waitUntil(timeout: .seconds(10)) { ended.isRaised })
        await second.value
        #expect(!signal.take())
    }

    @Test("A raise while nobody waits makes the next wait return at once")
    func raiseBeforeWait() async throws {
        let signal = ErasureSignal()
        _ = signal.take()
        signal.raise()
        let ended = TestLatch()
        let waiter = Task {
            await signal.wait(upTo: .seconds(60))
            ended.raise()
        }
        #expect(try await waitUntil(timeout: .seconds(10)) { ended.isRaised })
        waiter.cancel()
    }

    @Test("A wait without a raise ends at its limit")
    func endsAtLimit() async throws {
        let signal = ErasureSignal()
        _ = signal.take()
        await signal.wait(upTo: .milliseconds(20))
        #expect(!signal.take())
    }

    @Test("Cancelling the waiting task ends the wait")
    func endsOnCancel() async throws {
        let signal = ErasureSignal()
        _ = signal.take()
        let ended = TestLatch()
        let waiter = Task {
            await signal.wait(upTo: .seconds(60))
            ended.raise()
        }
        waiter.cancel()
        #expect(try await waitUntil(timeout: .seconds(10)) { ended.isRaised })
        #expect(!signal.take())
    }
}
