import Metrics
import Synchronization

/// How erasures are paged, bounded and retried (SPEC §13). Every field has the product's
/// default; tests lower them to see pages, bounds and retries with small numbers.
public struct ErasureSettings: Sendable, Hashable {
    /// Events a step reads at most (and devices it erases at most, twice this): one step is one
    /// transaction, and its memory and statements are bounded by this whatever the person's
    /// size. 2,000 events hold a few MB.
    public var pageSize = 2000
    /// Erasures an app may have pending (performed or not) at once; beyond, a request is 429
    /// `rateLimited`.
    public var maxPendingPerApp = 10_000
    /// The wait before a failed step of an erasure is tried again; it doubles with each
    /// further failure of that erasure, up to `maxRetryDelay`.
    public var retryDelay: Duration = .seconds(1)
    public var maxRetryDelay: Duration = .seconds(300)
    /// How long a step waits for a lock (the analytics rollup's, the person's, the erasure's
    /// row) before it fails, to be retried: a step never parks the worker behind a long holder
    /// (a rebuild holds the rollup's lock for minutes).
    public var lockTimeout: Duration = .seconds(5)

    public init() {}

    static func milliseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return max(0, seconds * 1000 + attoseconds / 1_000_000_000_000_000)
    }
}

/// The erasure settings of one service, changeable while it runs (tests lower them after
/// building it), and the erasure worker's metrics.
final class ErasureRuntime: Sendable {
    private let current = Mutex(ErasureSettings())

    var settings: ErasureSettings {
        get { current.withLock { $0 } }
        set { current.withLock { $0 = newValue } }
    }

    /// Steps (pages) of phase 1 that committed.
    let pages = Counter(label: "locgate_erasure_pages_total")
    /// Steps that failed and were left for a retry after a backoff.
    let failures = Counter(label: "locgate_erasure_step_failures_total")
    /// Events erased by erasures.
    let eventsErased = Counter(label: "locgate_erasure_events_erased_total")
}
