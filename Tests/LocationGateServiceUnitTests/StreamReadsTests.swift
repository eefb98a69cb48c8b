import Foundation
import LocationGateService
import LocationGateTestKit
import Synchronization
import Testing

/// The push streams' share of the database (`StreamReads`) on its own, without a database:
/// its bound, its turns between apps, and waiters that leave.
@Suite("Push streams: the bounded, fair share of reads", .timeLimit(.minutes(1)))
struct StreamReadsTests {
    /// What ran, in order, and how many at once at most.
    final class Record: Sendable {
        private let state = Mutex((order: [String](), running: 0, most: 0))

        func start(_ name: String) {
            state.withLock { state in
                state.order.append(name)
                state.running += 1
                state.most = max(state.most, state.running)
            }
        }

        func end() { state.withLock { $0.running -= 1 } }
        var order: [String] { state.withLock { $0.order } }
        var most: Int { state.withLock { $0.most } }
    }

    /// Waits (polling) until `latch` is raised: a read that holds its place until the test lets it go.
    static func hold(until latch: TestLatch) async throws {
        while !latch.isRaised { try await Task.sleep(for: .milliseconds(2)) }
    }

    @Test("40 reads of one app with a limit of 3: never more than 3 at once, all of them run")
    func bounded() async throws {
        let reads = StreamReads(limit: 3)
        let record = Record()
        let app = UUID()
        let go = TestLatch()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<40 {
                group.addTask {
                    try await reads.run(appID: app) {
                        record.start("\(index)")
                        try await Self.hold(until: go)
                        record.end()
                    }
                }
            }
            #expect(try await waitUntil { reads.waiting == 37 && reads.running == 3 })
            go.raise()
            try await group.waitForAll()
        }
        #expect(record.order.count == 40 && record.most == 3)
        #expect(reads.running == 0 && reads.waiting == 0)
    }

    @Test("With one place held, five reads of app A queued before one of app B: B's runs second, not sixth")
    func turnsBetweenApps() async throws {
        let reads = StreamReads(limit: 1)
        let record = Record()
        let (a, b, c) = (UUID(), UUID(), UUID())
        let release = TestLatch()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await reads.run(appID: c) { try await Self.hold(until: release) } }
            #expect(try await waitUntil { reads.running == 1 })
            for index in 0..<5 {
                group.addTask { try await reads.run(appID: a) { record.start("A\(index)"); record.end() } }
            }
            #expect(try await waitUntil { reads.waiting == 5 })
            group.addTask { try await reads.run(appID: b) { record.start("B"); record.end() } }
            #expect(try await waitUntil { reads.waiting == 6 })
            release.raise()
            try await group.waitForAll()
        }
        #expect(record.order.count == 6)
        #expect(record.order.dropFirst().first == "B", "\(record.order)")
    }

    @Test("A read whose task is cancelled while it waits leaves the queue at once; the place is then free for the next")
    func cancelledWaiterLeaves() async throws {
        let reads = StreamReads(limit: 1)
        let app = UUID()
        let release = TestLatch()
        let holder = Task { try await reads.run(appID: app) { try await Self.hold(until: release) } }
        #expect(try await waitUntil { reads.running == 1 })
        let waiter = Task { try await reads.run(appID: app) { "ran" } }
        #expect(try await waitUntil { reads.waiting == 1 })
        waiter.cancel()
        await #expect(throws: CancellationError.self) { try await waiter.value }
        #expect(reads.waiting == 0)
        release.raise()
        try await holder.value
        #expect(reads.running == 0)
        let next = try await reads.run(appID: app) { "next" }
        #expect(next == "next")
    }
}
