import Foundation
import Synchronization

/// The keys that hold push streams open on this process, so that a revocation closes them
/// (SPEC §5: a push stream or change feed that a revoked key opened is closed within the
/// second, on every server, and sends nothing after).
///
/// A stream registers its key (by digest, as the revocation notice names it) with what to do
/// when the key is revoked. A revocation, made here or announced by another process on
/// `locgate_keys`, reaches `revoked(_:)`, which runs and forgets that key's handlers. When the
/// notices may have been missed (the LISTEN connection was re-established: `CacheResync`), every
/// watched key is looked up again, and those no longer live are treated as revoked.
public final class KeyRevocations: Sendable {
    private struct Watch: Sendable {
        var digest: KeyDigest
        var onRevoked: @Sendable () -> Void
    }

    private struct State {
        var next: UInt64 = 0
        var watches: [UInt64: Watch] = [:]
        var byDigest: [KeyDigest: Set<UInt64>] = [:]
    }

    private let state = Mutex(State())

    init() {}

    /// Keys watched now (tests, metrics).
    public var count: Int { state.withLock { $0.watches.count } }

    /// Calls `onRevoked` once, from whichever task learns of it, when `key` is revoked; until
    /// the returned watch is cancelled or released.
    func watch(digest: KeyDigest, onRevoked: @escaping @Sendable () -> Void) -> KeyWatch {
        let id = state.withLock { state -> UInt64 in
            state.next &+= 1
            state.watches[state.next] = Watch(digest: digest, onRevoked: onRevoked)
            state.byDigest[digest, default: []].insert(state.next)
            return state.next
        }
        return KeyWatch(revocations: self, id: id)
    }

    /// The key with this digest was revoked: its handlers run once and are forgotten.
    func revoked(_ digest: KeyDigest) {
        let handlers = state.withLock { state -> [@Sendable () -> Void] in
            guard let ids = state.byDigest.removeValue(forKey: digest) else { return [] }
            return ids.compactMap { state.watches.removeValue(forKey: $0)?.onRevoked }
        }
        for handler in handlers { handler() }
    }

    /// The digests watched now, each once.
    var watchedDigests: [KeyDigest] { state.withLock { Array($0.byDigest.keys) } }

    fileprivate func cancel(_ id: UInt64) {
        state.withLock { state in
            guard let watch = state.watches.removeValue(forKey: id) else { return }
            state.byDigest[watch.digest]?.remove(id)
            if state.byDigest[watch.digest]?.isEmpty == true { state.byDigest[watch.digest] = nil }
        }
    }
}

/// One stream's watch on its key: cancelled when the stream ends (or when released).
public final class KeyWatch: Sendable {
    private let revocations: KeyRevocations?
    private let id: UInt64

    fileprivate init(revocations: KeyRevocations, id: UInt64) {
        self.revocations = revocations
        self.id = id
    }

    /// A watch on nothing: for a stream opened with the admin token, which no one revokes.
    public init() {
        self.revocations = nil
        self.id = 0
    }

    public func cancel() { revocations?.cancel(id) }

    deinit { cancel() }
}

/// The face push streams use to end when the key that opened them is revoked.
public protocol KeyRevocationWatching: Sendable {
    /// Calls `onRevoked` once when `key` is revoked, until the watch is cancelled.
    func watchRevocation(ofKey key: Substring, onRevoked: @escaping @Sendable () -> Void) -> KeyWatch
}

extension APIKeys: KeyRevocationWatching {}
