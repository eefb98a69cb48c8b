import LocationGateTestKit
import Testing
@testable import LocationGateService

/// The erasure worker's wait: it must wake at once for a raise, and never hang past its limit or
/// its task's cancellation. Each wait here has a limit of a minute, far beyond the test's own
/// deadline, so a wait that only ended at its limit fails the test.
@Suite("ErasureSignal", .timeLimit(.minutes(1)))
struct ErasureSignalTests {
    /// A signal as the worker leaves it after a look: not raised.
    static func loweredSignal() -> ErasureSignal {
        let signal = ErasureSignal()
        _ = signal.take()
        return signal
    }

    /// A wait of a minute in a task of its own, and a latch raised when it ends.
    static func longWait(on signal: ErasureSignal) -> (Task<Void, Never>, TestLatch) {
        let ended = TestLatch()
        let waiter = Task {
            await signal.wait(upTo: .seconds(60))
            ended.raise()
        }
        return (waiter, ended)
    }

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
        let signal = Self.loweredSignal()
        let (waiter, ended) = Self.longWait(on: signal)
        #expect(try await waitUntil { signal.hasWaiter })
        #expect(!ended.isRaised)
        signal.raise()
        #expect(try await waitUntil(timeout: .seconds(10)) { ended.isRaised })
        await waiter.value
        #expect(signal.take())
    }

    @Test("A late wake-up of an earlier wait (its limit, its cancellation) does not end the next one")
    func lateWakeIsIgnored() async throws {
        let signal = Self.loweredSignal()
        let first = Task { await signal.wait(upTo: .seconds(60)) }
        #expect(try await waitUntil { signal.hasWaiter })
        signal.raise()
        await first.value
        #expect(signal.take())
        let earlier = signal.currentWait

        let (second, ended) = Self.longWait(on: signal)
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
        let signal = Self.loweredSignal()
        signal.raise()
        let (waiter, ended) = Self.longWait(on: signal)
        #expect(try await waitUntil(timeout: .seconds(10)) { ended.isRaised })
        waiter.cancel()
    }

    @Test("A wait without a raise ends at its limit")
    func endsAtLimit() async throws {
        let signal = Self.loweredSignal()
        await signal.wait(upTo: .milliseconds(20))
        #expect(!signal.take())
    }

    @Test("Cancelling the waiting task ends the wait")
    func endsOnCancel() async throws {
        let signal = Self.loweredSignal()
        let (waiter, ended) = Self.longWait(on: signal)
        waiter.cancel()
        #expect(try await waitUntil(timeout: .seconds(10)) { ended.isRaised })
        #expect(!signal.take())
    }
}
