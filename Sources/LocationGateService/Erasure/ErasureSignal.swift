import Synchronization

/// Tells this process's erasure worker that there may be erasure work: a request, a phase 1
/// done elsewhere (the notification on `locgate_erasures`), or a resync after which
/// notifications may have been missed. Without one, an idle worker only looks every few
/// seconds, so that idle servers do not query the database four times a second; with one, a
/// waiting worker wakes at once, so that an erasure starts within milliseconds of its request.
///
/// One waiter at a time: the process's one `ErasureWorker`.
final class ErasureSignal: Sendable {
    private struct State {
        /// Raised since the last `take()`.
        var raised = true
        /// A wake-up (raise, time limit, cancellation) that came while nobody was waiting; the
        /// next wait returns at once. At worst one early look, never a missed one.
        var wakePending = false
        var waiter: CheckedContinuation<Void, Never>?
    }

    private let state = Mutex(State())

    func raise() {
        state.withLock { $0.raised = true }
        wake()
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

    /// Returns once the signal is raised, `limit` has passed, or the task is cancelled.
    func wait(upTo limit: Duration) async {
        let timer = Task { [weak self] in
            try? await Task.sleep(for: limit)
            self?.wake()
        }
        defer { timer.cancel() }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    if state.raised || state.wakePending || Task.isCancelled {
                        state.wakePending = false
                        return true
                    }
                    state.waiter = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            wake()
        }
    }

    /// Resumes the waiter, or, when there is none yet, lets the next wait return at once.
    private func wake() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard let waiter = state.waiter else {
                state.wakePending = true
                return nil
            }
            state.waiter = nil
            return waiter
        }
        waiter?.resume()
    }
}
