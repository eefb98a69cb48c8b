import DequeModule
import Foundation
import Synchronization

/// The share of the database connections that push streams read with (SPEC §5 "Resources":
/// while one app keeps opening and closing its whole quota of streams, another app's gates,
/// ingest and history keep answering without a 503).
///
/// Every read a stream makes (the feed's head when it opens, each page of a catch-up, an OFREP
/// stream's evaluation) runs inside `run`, which lets at most `limit` of them reach the pool at
/// once (by default a quarter of it, `defaultLimit`). The others wait here, not in the pool's
/// bounded queue of callers, so streams can neither take every connection nor fill the queue
/// that requests are refused from. Waiters are served one app at a time in turn (each app's in
/// arrival order), so one app's churn delays another app's streams by at most one read per
/// app ahead of it, not by everything that app queued. A stream that ends while it waits
/// (its client left) leaves the queue at once: its task's cancellation removes it.
public final class StreamReads: Sendable {
    /// Reads in flight at most.
    public let limit: Int

    private struct Waiter {
        var id: UInt64
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var running = 0
        /// Each app's waiters, in arrival order.
        var queues: [UUID: Deque<Waiter>] = [:]
        /// The apps with waiters, in the order they are served next.
        var turns = Deque<UUID>()
        var waiting = 0
        var nextID: UInt64 = 0
    }

    private enum Admission {
        case proceed
        case wait
        case cancelled
    }

    private let state = Mutex(State())

    public init(limit: Int) {
        self.limit = max(1, limit)
    }

    /// A quarter of the pool, at least one connection.
    public static func defaultLimit(poolSize: Int) -> Int {
        max(1, poolSize / 4)
    }

    /// Reads waiting for their turn now.
    public var waiting: Int { state.withLock { $0.waiting } }

    /// Reads in flight now.
    public var running: Int { state.withLock { $0.running } }

    /// Runs `body` (a read of the stream's app) once one of the `limit` places is free. Throws
    /// `CancellationError` when the task is cancelled before its turn, and what `body` throws.
    public func run<T>(appID: UUID, _ body: () async throws -> T) async throws -> T {
        try await acquire(appID)
        do {
            let value = try await body()
            release()
            return value
        } catch {
            release()
            throw error
        }
    }

    private func acquire(_ appID: UUID) async throws {
        let id = state.withLock { state -> UInt64 in
            state.nextID &+= 1
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let admission = state.withLock { state -> Admission in
                    // Checked under the lock: a cancellation after it finds the waiter queued.
                    if Task.isCancelled { return .cancelled }
                    if state.running < limit, state.waiting == 0 {
                        state.running += 1
                        return .proceed
                    }
                    if state.queues[appID] == nil {
                        state.queues[appID] = [Waiter(id: id, continuation: continuation)]
                        state.turns.append(appID)
                    } else {
                        state.queues[appID]?.append(Waiter(id: id, continuation: continuation))
                    }
                    state.waiting += 1
                    return .wait
                }
                switch admission {
                case .proceed: continuation.resume()
                case .cancelled: continuation.resume(throwing: CancellationError())
                case .wait: break
                }
            }
        } onCancel: {
            let waiter = state.withLock { state -> Waiter? in
                guard let index = state.queues[appID]?.firstIndex(where: { $0.id == id }) else { return nil }
                let waiter = state.queues[appID]?.remove(at: index)
                state.waiting -= 1
                if state.queues[appID]?.isEmpty ?? false {
                    state.queues[appID] = nil
                    state.turns.removeAll { $0 == appID }
                }
                return waiter
            }
            waiter?.continuation.resume(throwing: CancellationError())
        }
    }

    /// A read is done: its place goes to the next app's first waiter, or is free again.
    private func release() {
        let next = state.withLock { state -> Waiter? in
            while let appID = state.turns.popFirst() {
                guard let waiter = state.queues[appID]?.popFirst() else {
                    state.queues[appID] = nil
                    continue
                }
                state.waiting -= 1
                if state.queues[appID]?.isEmpty ?? true {
                    state.queues[appID] = nil
                } else {
                    state.turns.append(appID)
                }
                return waiter
            }
            state.running -= 1
            return nil
        }
        next?.continuation.resume()
    }
}
