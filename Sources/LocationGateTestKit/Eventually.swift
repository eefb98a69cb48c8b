import Foundation
import Synchronization

// Waiting in tests. A test that sleeps for a while and then asserts guesses how long the
// machine needs, and the guess fails on a loaded one (two cores, another build running). These
// helpers poll for the condition itself until a generous deadline instead: they return as soon
// as it holds, so they cost nothing when the machine is quick, and wait longer only when it is
// slow. A deadline here means "eventually", never "fast enough": a test that wants to report a
// latency measures it, and asserts only what a loaded machine cannot break.

/// Polls `condition` every `poll` until it returns true or `timeout` of `ContinuousClock` time
/// has passed; returns whether it held (it is checked once more at the deadline). Use as
/// `#expect(try await waitUntil { pool.waiting == 1 })`. Throws what `condition` throws, and
/// `CancellationError` when the task is cancelled.
public func waitUntil(
    timeout: Duration = .seconds(10), poll: Duration = .milliseconds(10),
    _ condition: () async throws -> Bool
) async throws -> Bool {
    let clock = ContinuousClock()
    let deadline = clock.now.advanced(by: timeout)
    while true {
        if try await condition() { return true }
        if clock.now >= deadline { return false }
        try await Task.sleep(for: poll)
    }
}

/// Polls `value` every `poll` until it returns non-nil, and returns that; throws
/// `WaitTimedOut` (naming `what`) when `timeout` passes first.
public func waitFor<T>(
    _ what: @autoclosure () -> String, timeout: Duration = .seconds(10), poll: Duration = .milliseconds(10),
    _ value: () async throws -> T?
) async throws -> T {
    let clock = ContinuousClock()
    let deadline = clock.now.advanced(by: timeout)
    while true {
        if let value = try await value() { return value }
        if clock.now >= deadline { throw WaitTimedOut(what: what(), timeout: timeout) }
        try await Task.sleep(for: poll)
    }
}

/// `waitFor` gave up.
public struct WaitTimedOut: Error, CustomStringConvertible {
    public var what: String
    public var timeout: Duration

    public var description: String { "\(what) did not happen within \(timeout)" }
}

/// A one-way signal between a test and work it started, so that neither side guesses how long
/// the other takes: work raises it when it reached a point (a connection held, a lock taken),
/// and the test waits with `waitUntil { latch.isRaised }`; or the test raises it to let work go
/// on (`block`).
public final class TestLatch: Sendable {
    private let raised = Atomic<Bool>(false)

    public init() {}

    public func raise() { raised.store(true, ordering: .releasing) }

    public var isRaised: Bool { raised.load(ordering: .acquiring) }

    /// Blocks the calling thread until the latch is raised or `limit` passes; whether it was
    /// raised. For synchronous bodies that run on a pool's own thread while they hold a
    /// connection (never on a cooperative thread); the limit frees the connection when a
    /// failed test never raises it.
    @discardableResult
    public func block(atMost limit: Duration = .seconds(60)) -> Bool {
        let deadline = ContinuousClock.now.advanced(by: limit)
        while !isRaised {
            if ContinuousClock.now >= deadline { return false }
            usleep(1_000)
        }
        return true
    }
}
