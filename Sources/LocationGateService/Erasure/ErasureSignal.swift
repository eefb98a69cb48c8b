import Synchronization

/// Tells this process's erasure worker that there may be erasure work: a request, a phase 1
/// done elsewhere (the notification on `locgate_erasures`), or a resync after which
/// notifications may have been missed. Without one, an idle worker only looks every few
/// seconds, so that idle servers do not query the database four times a second.
final class ErasureSignal: Sendable {
    private let raised = Atomic<Bool>(true)

    func raise() { raised.store(true, ordering: .releasing) }

    /// Whether it was raised since the last call.
    func take() -> Bool { raised.exchange(false, ordering: .acquiringAndReleasing) }
}
