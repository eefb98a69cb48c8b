import EventLog
import Foundation
import LocationGateTestSupport
import PostgresClient
import Testing

@Suite("Event log: subscriptions and checkpoints", .timeLimit(.minutes(6)))
struct SubscriptionTests {
    @Test("A subscription catches up from a position, then follows live appends through NOTIFY")
    func catchUpThenLive() async throws {
        let fixture = try await LogFixture.make()
        let start = try await GlobalOrderTests.currentEnd(fixture.pool)
        let early = (0..<30).map { _ in event("catchup", "d") }
        _ = try await fixture.log.append(appID: fixture.appID, events: early)
        // A poll interval far longer than the test: only NOTIFY can deliver the live events
        // before it. No poll can come sooner than `pollInterval` after the subscription started.
        // Other suites' writing transactions hold the readable horizon back for a minute and
        // more under load; the subscription reads on for `settleTime` after a notification,
        // so only a poll could deliver later than that.
        let pollInterval = Duration.seconds(600)
        let subscribed = ContinuousClock.now
        let subscription = fixture.log.subscribe(from: start, batchSize: 7, pollInterval: pollInterval)
        await subscription.startListening()
        var iterator = subscription.makeAsyncIterator()
        var received: [UUID] = []
        while received.count < early.count {
            guard let next = try await iterator.next() else { break }
            if next.stream.appID == fixture.appID { received.append(next.id) }
        }
        #expect(received == early.map(\.id))
        let heardBefore = subscription.notifications
        let live = (0..<3).map { _ in event("live", "d") }
        Task { _ = try await fixture.log.append(appID: fixture.appID, events: live) }
        var liveReceived: [UUID] = []
        while liveReceived.count < live.count {
            guard let next = try await iterator.next() else { break }
            if next.stream.appID == fixture.appID { liveReceived.append(next.id) }
        }
        #expect(liveReceived == live.map(\.id))
        // The live append was heard: the settling reads that follow a call would deliver it
        // without a notification, and would hide a LISTEN that hears nothing.
        #expect(try await waitUntil(timeout: .seconds(60)) { subscription.notifications > heardBefore }, "no notification of the live append")
        // Not a speed limit: the bound is what tells a notification from a poll.
        let took = ContinuousClock.now - subscribed
        #expect(took < pollInterval, "delivered after \(took): by a poll, not by NOTIFY")
        await fixture.pool.close()
    }

    @Test("Without notifications the subscription still follows by polling")
    func pollingFallback() async throws {
        let fixture = try await LogFixture.make()
        let start = try await GlobalOrderTests.currentEnd(fixture.pool)
        let subscription = fixture.log.subscribe(from: start, pollInterval: .milliseconds(50), listen: false)
        let appended = event("poll", "d")
        Task {
            // Only so that the append most likely comes after the subscription's first read,
            // which then finds it by polling; nothing is timed, and an append that came first
            // would be read all the same.
            try await Task.sleep(for: .milliseconds(100))
            _ = try await fixture.log.append(appID: fixture.appID, events: [appended])
        }
        for try await next in subscription where next.stream.appID == fixture.appID {
            #expect(next.id == appended.id)
            break
        }
        await fixture.pool.close()
    }

    @Test("Checkpoints save and load by name")
    func checkpoints() async throws {
        let fixture = try await LogFixture.make()
        let name = "test-\(UUID())"
        #expect(try await fixture.log.checkpoint(named: name) == .start)
        let position = LogPosition(transactionID: 1234, position: 99)
        try await fixture.log.saveCheckpoint(position, named: name)
        #expect(try await fixture.log.checkpoint(named: name) == position)
        try await fixture.log.saveCheckpoint(LogPosition(transactionID: 1300, position: 120), named: name)
        #expect(try await fixture.log.checkpoint(named: name).position == 120)
        await fixture.pool.close()
    }
}
