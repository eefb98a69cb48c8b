import EventLog
import Foundation
import ServiceLifecycle
import Synchronization

/// In-process fan-out of the change hints the `CacheFollower` receives, to the push streams
/// of SPEC §5 (OFREP event streams and `/v1/changes`). A hint only wakes a stream up: what it
/// sends is always read again from the state or the log, so a lost hint (the LISTEN connection
/// dropped) costs latency, never correctness; while hints are not followed the streams poll on
/// the hub's ticks.
///
/// Hints accumulate per subscriber as flags and wake it through a stream that keeps one
/// element: a burst of changes wakes a stream once (coalescing), and a subscriber that does
/// not keep up holds no backlog.
public final class ChangeHub: Sendable {
    /// What happened since a subscriber last looked.
    public struct Hints: OptionSet, Sendable {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }

        /// A stream of the subscriber's app (and user, if it named one) moved.
        public static let streams = Hints(rawValue: 1)
        /// The app's feature catalog changed.
        public static let features = Hints(rawValue: 2)
        /// Hints may have been missed (the listener reconnected): read everything again.
        public static let resync = Hints(rawValue: 4)
        /// The periodic tick (every 250 ms): for polling and time-outs.
        public static let tick = Hints(rawValue: 8)
    }

    /// One subscription: wait on `wakes`, then `take()` what happened.
    public struct Subscription: Sendable {
        public let wakes: AsyncStream<Void>
        fileprivate let id: UInt64
        fileprivate let hub: ChangeHub

        /// The hints since the last call, cleared.
        public func take() -> Hints {
            hub.subscribers.withLock { subscribers in
                guard let hints = subscribers[id]?.pending else { return [] }
                subscribers[id]?.pending = []
                return hints
            }
        }

        public func cancel() {
            if let subscriber = hub.subscribers.withLock({ $0.removeValue(forKey: id) }) {
                subscriber.continuation.finish()
            }
        }
    }

    private struct Subscriber {
        var appID: UUID
        var userID: String?
        var pending: Hints = []
        var continuation: AsyncStream<Void>.Continuation
    }

    private let subscribers = Mutex<[UInt64: Subscriber]>([:])
    private let nextID = Atomic<UInt64>(0)

    public init() {}

    /// Hints for one app, or one user of it, until cancelled.
    public func subscribe(appID: UUID, userID: String? = nil) -> Subscription {
        let (stream, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let id = nextID.add(1, ordering: .relaxed).newValue
        subscribers.withLock { $0[id] = Subscriber(appID: appID, userID: userID, continuation: continuation) }
        continuation.onTermination = { [weak self] _ in _ = self?.subscribers.withLock { $0.removeValue(forKey: id) } }
        return Subscription(wakes: stream, id: id, hub: self)
    }

    /// Subscribers now.
    public var count: Int { subscribers.withLock { $0.count } }

    func publish(_ changes: [StreamChange]) {
        guard !changes.isEmpty else { return }
        notify(.streams) { subscriber in
            changes.contains { $0.stream.appID == subscriber.appID && (subscriber.userID == nil || $0.stream.userID == subscriber.userID) }
        }
    }

    func publishFeatures(appID: UUID?) {
        notify(.features) { appID == nil || $0.appID == appID }
    }

    func publishResync() {
        notify(.resync) { _ in true }
    }

    /// Wakes every subscriber (for polling and time-outs); `ChangeTicker` calls it.
    public func tick() {
        notify(.tick) { _ in true }
    }

    private func notify(_ hints: Hints, _ matches: (Subscriber) -> Bool) {
        let wake = subscribers.withLock { subscribers in
            var wake: [AsyncStream<Void>.Continuation] = []
            for (id, subscriber) in subscribers where matches(subscriber) {
                subscribers[id]?.pending.formUnion(hints)
                wake.append(subscriber.continuation)
            }
            return wake
        }
        for continuation in wake { continuation.yield() }
    }
}

/// Ticks the hub every 250 ms while the server runs.
public struct ChangeTicker: Service {
    let hub: ChangeHub

    public init(hub: ChangeHub) {
        self.hub = hub
    }

    /// Returns (never throws) when the server shuts down gracefully.
    public func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(250))
                hub.tick()
            }
        }
    }
}
