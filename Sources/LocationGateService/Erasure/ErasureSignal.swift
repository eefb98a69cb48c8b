import Synchronization

/// Tells this process's erasure worker that there may be erasure work: a request, a phase 1
/// done elsewhere (the notification on `locgate_erasures`), or a resync after which
/// notifications may have been missed. Without one, an idle worker only looks every few
/// seconds, so that idle servers do not query the database four times a second; with one, a
/// waiting worker wakes at once, so that an erasure starts within milliseconds of its request.
///
/// One waiter at a time: the process's one `ErasureWorker`. Each wait has a number, and a
/// wake-up (its time limit, its task's cancellation) counts only for the wait it belongs to: a
/// limit that fires just after a raise ended its wait must not end the next one early, or the
/// worker would spin.
final class ErasureSignal: Sendable {
    private struct State {
        /// Raised since the last `take()`.
        var raised = true
        /// The number of the latest wait.
        var currentWait: UInt64 = 0
        /// The latest wait was woken before it suspended: it returns at once.
        var wokenBeforeSuspending = false
        var waiter: CheckedContinuation<Void, Never>?
    }

    private let state = Mutex(State())

    func raise() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.raised = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    /// Whether it was raised since the last call.
    func take() -> Bool {
        state.withLock { state in
            defer { state.raised = false }
            return state.raised
        }
    }

    /// Whether a wait is suspended now (tests wait for it before they raise).
    var hasWaiter: Bool { state.withLock { $0.waiter != nil } }

    /// The number of the latest wait (for tests of late wake-ups).
    var currentWait: UInt64 { state.withLock { $0.currentWait } }

    /// Returns once the signal is raised, `limit` has passed, or the task is cancelled.
    func wait(upTo limit: Duration) async {
        let number = state.withLock { state -> UInt64 in
            state.currentWait &+= 1
            state.wokenBeforeSuspending = false
            return state.currentWait
        }
        let timer = Task { [weak self] in
            do { try await Task.sleep(for: limit) } catch { return }
            self?.wake(wait: number)
        }
        defer { timer.cancel() }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    if state.raised || state.wokenBeforeSuspending || Task.isCancelled { return true }
                    state.waiter = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            wake(wait: number)
        }
    }

    /// Ends wait `number` (its limit passed, or its task was cancelled): resumes it, or, when it
    /// has not suspended yet, makes it return at once. Does nothing for an earlier wait.
    func wake(wait number: UInt64) {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard number == state.currentWait else { return nil }
            guard let waiter = state.waiter else {
                state.wokenBeforeSuspending = true
                return nil
            }
            state.waiter = nil
            return waiter
        }
        waiter?.resume()
    }
}
