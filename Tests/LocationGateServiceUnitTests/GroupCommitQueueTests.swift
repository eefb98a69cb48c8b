import Foundation
import Testing

@testable import LocationGateService

/// Group commit's queue as event → action sequences: no clock, no task, no database. Requests
/// are named by strings; times are what the committer's clock would read. The same behaviour
/// end to end, with a stuck stream lock and a manual clock, is in `GroupCommitTests` and
/// `GroupCommitWatcherTests` (against PostgreSQL).
@Suite("Group commit's queue: admission, groups, the watcher and the queue timeout", .timeLimit(.minutes(1)))
struct GroupCommitQueueTests {
    static let app = UUID(), other = UUID()

    static func queue(
        maxInFlight: Int = 2, spillAfter: Duration = .milliseconds(20), maxEvents: Int = 2000,
        maxQueuedEvents: Int = 20_000, maxQueuedEventsPerApp: Int = 5_000, queueTimeout: Duration = .seconds(4)
    ) -> GroupCommitQueue<String> {
        GroupCommitQueue(
            maxInFlight: maxInFlight, spillAfter: spillAfter, maxEvents: maxEvents, maxQueuedEvents: maxQueuedEvents,
            maxQueuedEventsPerApp: maxQueuedEventsPerApp, queueTimeout: queueTimeout)
    }

    @Test("The first request starts a drainer, which commits it alone and leaves once the queue is empty")
    func firstRequestStartsADrainer() {
        var queue = Self.queue()
        #expect(queue.enqueue("a", appID: Self.app, events: 3, at: .zero) == .startDrainer)
        #expect(queue.queuedEvents == 3 && queue.drainers == 1)
        #expect(queue.drainerStarted(at: .milliseconds(1)) == .commit(group: ["a"], expired: []))
        #expect(queue.queuedEvents == 0)
        #expect(queue.groupFinished(at: .milliseconds(5)) == .stop(expired: [], startWatcher: false))
        #expect(queue.drainers == 0 && !queue.watching)
        // The next request starts a drainer again.
        #expect(queue.enqueue("b", appID: Self.app, events: 1, at: .milliseconds(6)) == .startDrainer)
    }

    @Test("Requests that arrive while a group commits form the next group, oldest first, up to maxEvents events and at least one request")
    func requestsWaitForTheNextGroup() {
        var queue = Self.queue(maxEvents: 10)
        #expect(queue.enqueue("a", appID: Self.app, events: 1, at: .zero) == .startDrainer)
        #expect(queue.drainerStarted(at: .zero) == .commit(group: ["a"], expired: []))
        // While a's group commits: the first waiter starts the watcher, the others just queue.
        #expect(queue.enqueue("b", appID: Self.app, events: 4, at: .milliseconds(1)) == .startWatcher)
        #expect(queue.enqueue("c", appID: Self.other, events: 4, at: .milliseconds(2)) == .queued)
        #expect(queue.enqueue("d", appID: Self.app, events: 4, at: .milliseconds(3)) == .queued)
        #expect(queue.enqueue("e", appID: Self.other, events: 30, at: .milliseconds(4)) == .queued)
        #expect(queue.queuedEvents == 42 && queue.queuedRequests == 4)
        // b and c make 8 events; d would make 12.
        #expect(queue.groupFinished(at: .milliseconds(5)) == .commit(group: ["b", "c"], expired: []))
        #expect(queue.groupFinished(at: .milliseconds(6)) == .commit(group: ["d"], expired: []))
        // A request larger than maxEvents is a group of its own.
        #expect(queue.groupFinished(at: .milliseconds(7)) == .commit(group: ["e"], expired: []))
        #expect(queue.groupFinished(at: .milliseconds(8)) == .stop(expired: [], startWatcher: false))
        #expect(queue.queuedEvents == 0 && queue.drainers == 0)
    }

    @Test("Beyond maxQueuedEvents a request is refused at once and nothing of it is queued")
    func boundedQueue() {
        var queue = Self.queue(maxQueuedEvents: 10, maxQueuedEventsPerApp: 10)
        #expect(queue.enqueue("a", appID: Self.app, events: 6, at: .zero) == .startDrainer)
        #expect(queue.enqueue("b", appID: Self.other, events: 5, at: .zero) == .refuse(.queueFull))
        #expect(queue.enqueue("c", appID: Self.other, events: 4, at: .zero) == .startWatcher)
        #expect(queue.queuedEvents == 10 && queue.queuedRequests == 2)
        #expect(queue.enqueue("d", appID: Self.other, events: 1, at: .zero) == .refuse(.queueFull))
        // Once a group takes them, there is room again.
        #expect(queue.drainerStarted(at: .zero) == .commit(group: ["a", "c"], expired: []))
        #expect(queue.enqueue("e", appID: Self.other, events: 10, at: .zero) == .queued)
    }

    @Test("One app holds at most its share of the queue; an app with nothing queued is always let in, and another app still queues")
    func perAppShare() {
        var queue = Self.queue(maxInFlight: 1, maxQueuedEvents: 400, maxQueuedEventsPerApp: 100)
        #expect(queue.enqueue("noisy-1", appID: Self.app, events: 60, at: .zero) == .startDrainer)
        #expect(queue.enqueue("noisy-2", appID: Self.app, events: 40, at: .zero) == .queued)
        #expect(queue.enqueue("noisy-3", appID: Self.app, events: 1, at: .zero) == .refuse(.appShareFull))
        // More than the share in one request, for an app with nothing queued.
        #expect(queue.enqueue("quiet", appID: Self.other, events: 150, at: .zero) == .queued)
        #expect(queue.queuedEvents == 250)
        #expect(queue.drainerStarted(at: .zero) == .commit(group: ["noisy-1", "noisy-2", "quiet"], expired: []))
        // Taken into a group, the noisy app's events no longer count against its share.
        #expect(queue.enqueue("noisy-4", appID: Self.app, events: 100, at: .zero) == .queued)
    }

    @Test("A request behind a stuck group gets another drainer once it has waited spillAfter, not before; the extra drainer leaves after its group")
    func watcherSpills() {
        var queue = Self.queue(maxInFlight: 2, spillAfter: .milliseconds(20))
        #expect(queue.enqueue("a", appID: Self.app, events: 1, at: .zero) == .startDrainer)
        #expect(queue.drainerStarted(at: .zero) == .commit(group: ["a"], expired: []))
        #expect(queue.enqueue("b", appID: Self.app, events: 1, at: .milliseconds(1)) == .startWatcher)
        #expect(queue.watching)
        // a's group commits promptly and the drainer takes b, whose group gets stuck.
        #expect(queue.groupFinished(at: .milliseconds(10)) == .commit(group: ["b"], expired: []))
        #expect(queue.enqueue("c", appID: Self.app, events: 1, at: .milliseconds(15)) == .queued)
        // The watcher wakes 20 ms after it started: c has waited 6 ms.
        #expect(queue.watcherWoke(at: .milliseconds(21)) == .wait)
        #expect(queue.drainers == 1)
        // 20 ms later c has waited 26 ms: b's group is stuck, and another drainer takes c.
        #expect(queue.watcherWoke(at: .milliseconds(41)) == .startDrainer)
        #expect(queue.drainers == 2)
        #expect(queue.drainerStarted(at: .milliseconds(41)) == .commit(group: ["c"], expired: []))
        // Its group done, the extra drainer leaves: the stuck one takes the queue after its group.
        #expect(queue.groupFinished(at: .milliseconds(45)) == .stop(expired: [], startWatcher: false))
        #expect(queue.drainers == 1)
        // Nothing waits: the watcher stops.
        #expect(queue.watcherWoke(at: .milliseconds(61)) == .stop)
        #expect(!queue.watching)
        #expect(queue.groupFinished(at: .seconds(1)) == .stop(expired: [], startWatcher: false))
        #expect(queue.drainers == 0)
    }

    @Test("With maxInFlight drainers stuck the watcher stops; the first drainer to leave with requests waiting starts it again")
    func watcherRestartsWhenADrainerLeaves() {
        var queue = Self.queue(maxInFlight: 2, spillAfter: .milliseconds(20))
        #expect(queue.enqueue("stuck-1", appID: Self.app, events: 1, at: .zero) == .startDrainer)
        #expect(queue.drainerStarted(at: .zero) == .commit(group: ["stuck-1"], expired: []))
        #expect(queue.enqueue("stuck-2", appID: Self.app, events: 1, at: .zero) == .startWatcher)
        #expect(queue.watcherWoke(at: .milliseconds(20)) == .startDrainer)
        #expect(queue.drainerStarted(at: .milliseconds(20)) == .commit(group: ["stuck-2"], expired: []))
        // Both drainers are stuck: a new request waits, and the watcher has nothing to start.
        #expect(queue.enqueue("waiting", appID: Self.app, events: 1, at: .milliseconds(21)) == .queued)
        #expect(queue.watcherWoke(at: .milliseconds(40)) == .stop)
        #expect(!queue.watching)
        // One group finishes: its drainer leaves (the other is still busy) and starts the watcher.
        #expect(queue.groupFinished(at: .milliseconds(50)) == .stop(expired: [], startWatcher: true))
        #expect(queue.watching && queue.drainers == 1)
        #expect(queue.watcherWoke(at: .milliseconds(70)) == .startDrainer)
        #expect(queue.drainerStarted(at: .milliseconds(70)) == .commit(group: ["waiting"], expired: []))
    }

    @Test("A request that waited longer than queueTimeout is refused when a drainer reaches it, and never appended")
    func queueTimeout() {
        var queue = Self.queue(maxInFlight: 1, queueTimeout: .seconds(4))
        #expect(queue.enqueue("stuck", appID: Self.app, events: 1, at: .zero) == .startDrainer)
        #expect(queue.drainerStarted(at: .zero) == .commit(group: ["stuck"], expired: []))
        #expect(queue.enqueue("late", appID: Self.app, events: 1, at: .zero) == .queued)
        #expect(queue.enqueue("on-time", appID: Self.other, events: 1, at: .seconds(1)) == .queued)
        // At 5 s, "late" has waited 5 s and "on-time" exactly 4 s.
        #expect(queue.groupFinished(at: .seconds(5)) == .commit(group: ["on-time"], expired: ["late"]))
        #expect(queue.enqueue("later", appID: Self.app, events: 1, at: .seconds(5)) == .queued)
        #expect(queue.groupFinished(at: .seconds(10)) == .stop(expired: ["later"], startWatcher: false))
        #expect(queue.queuedEvents == 0 && queue.drainers == 0)
    }
}
