import Synchronization

/// Whether this process's caches may answer: true only while the change notifications are
/// known to arrive, that is while the LISTEN connection answered a heartbeat within
/// `bound`. Outside that, every read goes to PostgreSQL (the polling fallback) and nothing is
/// cached, so a lost, killed or silently dead notification connection can never leave a stale
/// answer behind: SPEC §5 "Coherence".
///
/// A process without a follower (the CLI, a single-process test) passes `alwaysFollowing`.
public final class CacheCoherence: Sendable {
    /// How long after the last sign of life the caches are trusted.
    public let bound: Duration
    private let alwaysFollowing: Bool
    private let start = ContinuousClock.now
    /// Nanoseconds after `start` of the last heartbeat; `Int64.min` when not listening.
    private let aliveAt = Atomic<Int64>(Int64.min)

    public init(bound: Duration = .milliseconds(900), alwaysFollowing: Bool = false) {
        self.bound = bound
        self.alwaysFollowing = alwaysFollowing
    }

    /// True while cached answers are known to be no older than the last notification.
    public var isFollowing: Bool {
        if alwaysFollowing { return true }
        let last = aliveAt.load(ordering: .acquiring)
        guard last != Int64.min else { return false }
        return nanoseconds(ContinuousClock.now - start) - last < nanoseconds(bound)
    }

    /// The LISTEN connection answered (or has just started listening, after the caches were
    /// emptied).
    func markAlive() {
        aliveAt.store(nanoseconds(ContinuousClock.now - start), ordering: .releasing)
    }

    /// The LISTEN connection is gone: notifications are being missed from now on.
    func markLost() {
        aliveAt.store(Int64.min, ordering: .releasing)
    }

    private func nanoseconds(_ duration: Duration) -> Int64 {
        duration.components.seconds * 1_000_000_000 + duration.components.attoseconds / 1_000_000_000
    }
}
