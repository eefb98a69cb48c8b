import Foundation
import Hummingbird
import LocationGateService
import Metrics
import Synchronization

/// The push streams open on this process (SPEC §5), bounded per app and in all: a stream
/// beyond the app's share is 429 `rateLimited`, beyond the process's 503 `overloaded`, both
/// with Retry-After, before anything is held for it. What the open streams read from the
/// database goes through `reads`, a bounded share of the pool.
final class StreamRegistry: Sendable {
    let maxPerApp: Int
    let maxTotal: Int
    /// OFREP streams close after this long without a message (`inactivityDelaySec`).
    let inactivity: Duration
    /// A stream whose reader leaves more than this many messages unread is dropped.
    let bufferLimit: Int
    /// The database connections streams read with at once (`--stream-reads`).
    let reads: StreamReads
    /// Where a stream's key is watched, so that its revocation closes the stream (SPEC §5).
    let revocations: (any KeyRevocationWatching)?

    private struct Counts {
        var total = 0
        var byApp: [UUID: Int] = [:]
    }

    private let counts = Mutex(Counts())
    let dropped = Counter(label: "locgate_streams_dropped_total")

    init(
        maxPerApp: Int, maxTotal: Int, inactivity: Duration, bufferLimit: Int = 256, reads: StreamReads = StreamReads(limit: 1),
        revocations: (any KeyRevocationWatching)? = nil
    ) {
        self.maxPerApp = maxPerApp
        self.maxTotal = maxTotal
        self.inactivity = inactivity
        self.bufferLimit = bufferLimit
        self.reads = reads
        self.revocations = revocations
    }

    /// Counts in a stream that `request`'s key opens and returns its slot, or throws why not
    /// (429 or 503 with Retry-After). The slot watches the key: its revocation ends the stream.
    func open(_ appID: UUID, for request: Request) throws(APIError) -> StreamSlot {
        let slot = try open(appID)
        if let revocations, let key = AuthenticationMiddleware.token(in: request) {
            slot.watch = revocations.watchRevocation(ofKey: key) { [weak slot] in slot?.revoke() }
        }
        return slot
    }

    /// Counts a stream in and returns its slot, or throws why not (429 or 503 with Retry-After).
    func open(_ appID: UUID) throws(APIError) -> StreamSlot {
        let refused: ServiceError? = counts.withLock { counts in
            if counts.total >= maxTotal {
                return ServiceError(.overloaded, "the server holds \(maxTotal) streams already")
            }
            if counts.byApp[appID, default: 0] >= maxPerApp {
                return ServiceError(.rateLimited, "the app holds \(maxPerApp) open streams already; close one first")
            }
            counts.total += 1
            counts.byApp[appID, default: 0] += 1
            return nil
        }
        if let refused { throw APIError(refused, retryAfter: 1) }
        return StreamSlot(registry: self, appID: appID)
    }

    fileprivate func close(_ appID: UUID) {
        counts.withLock { counts in
            counts.total -= 1
            let left = counts.byApp[appID, default: 1] - 1
            counts.byApp[appID] = left > 0 ? left : nil
        }
    }

    var open: Int { counts.withLock { $0.total } }
}

/// One stream's place in the registry, given back exactly once: by `release()` when the
/// stream ends, or when the slot is freed without it. A response whose body never runs (the
/// client reset the connection before the head was written, or the router dropped the
/// response) frees its body closure and with it the slot, so the caps never leak.
final class StreamSlot: Sendable {
    private let registry: StreamRegistry
    let appID: UUID
    private let released = Mutex(false)
    /// The watch on the key that opened the stream, cancelled with the slot.
    fileprivate(set) var watch: KeyWatch? {
        get { watchHeld.withLock { $0 } }
        set { watchHeld.withLock { $0 = newValue } }
    }
    private let watchHeld = Mutex<KeyWatch?>(nil)
    /// Whether the key was revoked, and what stops the stream's buffer when it is.
    private struct Revocation {
        var revoked = false
        var stop: (@Sendable () -> Void)?
    }
    private let revocation = Mutex(Revocation())

    fileprivate init(registry: StreamRegistry, appID: UUID) {
        self.registry = registry
        self.appID = appID
    }

    /// Gives the slot back; later calls do nothing.
    func release() {
        let first = released.withLock { released in
            defer { released = true }
            return !released
        }
        if first {
            watchHeld.withLock { $0 }?.cancel()
            registry.close(appID)
        }
    }

    /// The key that opened the stream was revoked: the stream sends nothing more and ends.
    func revoke() {
        let stop = revocation.withLock { state -> (@Sendable () -> Void)? in
            state.revoked = true
            return state.stop
        }
        stop?()
    }

    /// True once the key was revoked: nothing more may be written.
    var isRevoked: Bool { revocation.withLock { $0.revoked } }

    /// What ends the stream's buffer when the key is revoked; run at once when it already was.
    func onRevoke(_ stop: @escaping @Sendable () -> Void) {
        let revoked = revocation.withLock { state -> Bool in
            state.stop = stop
            return state.revoked
        }
        if revoked { stop() }
    }

    deinit { release() }
}
