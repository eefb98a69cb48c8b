import DequeModule
import Foundation

/// The queue of group commit as a state machine without I/O: requests come in, groups go out,
/// and each event (a request, a drainer ready for a group, the watcher waking) returns the
/// action that `GroupCommitter` performs: refuse a request, start a drainer or the watcher,
/// commit a group, refuse the requests that waited too long. Time comes in with the events, so
/// tests drive it as a sequence of events and actions, with no clock, task or database.
///
/// - A request is refused at once (`overloaded`) when the queue would hold more than
///   `maxQueuedEvents`, or its app more than `maxQueuedEventsPerApp` (an app with nothing
///   queued is always let in, whatever its batch, within the queue's bound).
/// - One drainer runs while groups commit promptly: it takes what is queued, oldest first, up to
///   `maxEvents` events (at least one request, however large), commits it, and takes the next.
/// - While requests wait behind a running group, one watcher wakes every `spillAfter`; when the
///   oldest request has waited that long, the running groups are stuck (a lock, a slow disk) and
///   another drainer starts, up to `maxInFlight`.
/// - After a group, a drainer leaves while another runs, so extra drainers last only as long as
///   a group is stuck; the last one leaves only with the queue empty.
/// - A request that waited longer than `queueTimeout` is refused (`overloaded`) when a drainer
///   reaches it, without being appended.
struct GroupCommitQueue<Payload> {
    /// Why a request was refused on arrival.
    enum Refusal: Equatable {
        /// The queue would hold more than `maxQueuedEvents`.
        case queueFull
        /// Its app would hold more than `maxQueuedEventsPerApp`.
        case appShareFull
    }

    /// What to do after `enqueue`.
    enum EnqueueAction: Equatable {
        /// Answer the request `overloaded` now; it is not queued.
        case refuse(Refusal)
        /// Nothing: a running group takes it next, or the watcher is already watching.
        case queued
        /// Start the watcher, which calls `watcherWoke(at:)` every `spillAfter`.
        case startWatcher
        /// Start a drainer, which calls `drainerStarted(at:)`.
        case startDrainer
    }

    /// What the watcher does after waking.
    enum WatchAction: Equatable {
        /// Stop watching: nothing waits, or `maxInFlight` drainers run (the next to leave
        /// starts the watcher again).
        case stop
        /// Sleep `spillAfter` and wake again.
        case wait
        /// Start another drainer (it calls `drainerStarted(at:)`), then sleep and wake again.
        case startDrainer
    }

    /// What a drainer does next.
    enum DrainAction {
        /// Refuse `expired` (`overloaded`: they waited longer than `queueTimeout`), append
        /// `group` in one transaction, answer its requests, then call `groupFinished(at:)`.
        case commit(group: [Payload], expired: [Payload])
        /// Refuse `expired`, start the watcher if `startWatcher`, and end.
        case stop(expired: [Payload], startWatcher: Bool)
    }

    private struct Entry {
        var appID: UUID
        var events: Int
        /// When it was queued, on the committer's clock.
        var enqueued: Duration
        var payload: Payload
    }

    let maxInFlight: Int
    let spillAfter: Duration
    let maxEvents: Int
    let maxQueuedEvents: Int
    let maxQueuedEventsPerApp: Int
    let queueTimeout: Duration

    private var queue: Deque<Entry> = []
    private var queuedByApp: [UUID: Int] = [:]
    /// Events waiting for a group now.
    private(set) var queuedEvents = 0
    /// Drainers running (each commits one group at a time).
    private(set) var drainers = 0
    /// A watcher is running.
    private(set) var watching = false

    init(
        maxInFlight: Int, spillAfter: Duration, maxEvents: Int, maxQueuedEvents: Int, maxQueuedEventsPerApp: Int,
        queueTimeout: Duration
    ) {
        self.maxInFlight = maxInFlight
        self.spillAfter = spillAfter
        self.maxEvents = maxEvents
        self.maxQueuedEvents = maxQueuedEvents
        self.maxQueuedEventsPerApp = maxQueuedEventsPerApp
        self.queueTimeout = queueTimeout
    }

    /// Requests waiting for a group now.
    var queuedRequests: Int { queue.count }

    /// A request of `events` events from `appID` arrives at `now`.
    mutating func enqueue(_ payload: Payload, appID: UUID, events: Int, at now: Duration) -> EnqueueAction {
        guard queuedEvents + events <= maxQueuedEvents else { return .refuse(.queueFull) }
        let appQueued = queuedByApp[appID, default: 0]
        guard appQueued == 0 || appQueued + events <= maxQueuedEventsPerApp else { return .refuse(.appShareFull) }
        queue.append(Entry(appID: appID, events: events, enqueued: now, payload: payload))
        queuedEvents += events
        queuedByApp[appID] = appQueued + events
        if drainers == 0 {
            drainers = 1
            return .startDrainer
        }
        // A group is committing and will take this request next, unless it is stuck.
        guard drainers < maxInFlight, !watching else { return .queued }
        watching = true
        return .startWatcher
    }

    /// The watcher woke at `now`, `spillAfter` after it started or last woke.
    mutating func watcherWoke(at now: Duration) -> WatchAction {
        guard let oldest = queue.first?.enqueued, drainers < maxInFlight else {
            watching = false
            return .stop
        }
        guard now - oldest >= spillAfter else { return .wait }
        drainers += 1
        return .startDrainer
    }

    /// A drainer that `.startDrainer` started is ready for its first group.
    mutating func drainerStarted(at now: Duration) -> DrainAction {
        nextGroup(at: now, afterGroup: false)
    }

    /// A drainer answered every request of its group (committed or failed).
    mutating func groupFinished(at now: Duration) -> DrainAction {
        nextGroup(at: now, afterGroup: true)
    }

    private mutating func nextGroup(at now: Duration, afterGroup: Bool) -> DrainAction {
        // After a group, a drainer leaves while another runs: the other takes the queue when its
        // group is done (the last drainer leaves only with the queue empty), so extra drainers
        // last only as long as a group is stuck, and one group at a time resumes after it. If
        // the others are all stuck, the watcher starts one again.
        if afterGroup && drainers > 1 {
            drainers -= 1
            guard !queue.isEmpty && !watching else { return .stop(expired: [], startWatcher: false) }
            watching = true
            return .stop(expired: [], startWatcher: true)
        }
        let oldest = now - queueTimeout
        var group: [Payload] = []
        var expired: [Payload] = []
        var count = 0
        while let next = queue.first, group.isEmpty || count + next.events <= maxEvents {
            queue.removeFirst()
            queuedEvents -= next.events
            let left = queuedByApp[next.appID, default: 0] - next.events
            queuedByApp[next.appID] = left > 0 ? left : nil
            if next.enqueued < oldest {
                expired.append(next.payload)
                continue
            }
            group.append(next.payload)
            count += next.events
        }
        guard !group.isEmpty else {
            drainers -= 1
            return .stop(expired: expired, startWatcher: false)
        }
        return .commit(group: group, expired: expired)
    }
}

extension GroupCommitQueue.Refusal: Sendable {}
extension GroupCommitQueue.EnqueueAction: Sendable {}
extension GroupCommitQueue.WatchAction: Sendable {}
extension GroupCommitQueue.DrainAction: Sendable where Payload: Sendable {}
extension GroupCommitQueue.DrainAction: Equatable where Payload: Equatable {}
