import EventLog
import Foundation
import LocationAuthorization
import LocationGateService
import LocationGateTestSupport
import NIOCore
import PostgresClient
import Testing

@testable import LocationGateHTTP

/// The change feed's producer on its own (the live streams run in Deploy/e2e's pytest).
///
/// The feed reads below the cluster's oldest running transaction, and the tests share one
/// cluster: another test's long write transaction makes the events unreadable for a while. A
/// ticker wakes the producer as `ChangeTicker` does in a server, so it polls again instead of
/// waiting for a hint that already came; the time limit turns any other wait into a failure.
@Suite("Push streams: the change feed's producer", .timeLimit(.minutes(2)))
struct StreamTests {
    /// Runs `body` with the hub ticking every 50 ms.
    static func ticking<T>(_ service: GateService, _ body: () async throws -> T) async rethrows -> T {
        let ticker = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(50))
                service.push.hub.tick()
            }
        }
        defer { ticker.cancel() }
        return try await body()
    }

    static func populate(_ service: GateService, _ appID: UUID, devices: Int) async throws {
        let events = (0..<devices).flatMap { device in
            (0..<3).map { step in
                EventSubmission(
                    id: UUID(), userId: "u", deviceId: "d\(device)", occurredAt: Date(timeIntervalSince1970: 1_795_341_600),
                    event: .locationServicesChanged(enabled: step % 2 == 1))
            }
        }
        _ = try await service.events.ingest(appID: appID, submissions: events)
    }

    @Test("A reader that leaves its buffer full is dropped (the producer stops), not buffered without end")
    func slowReaderDropped() async throws {
        let pool = try await TestDatabase.pool(size: 2)
        let service = GateService(pool: pool, logger: TestDatabase.logger)
        let appID = try await TestDatabase.makeApp(pool)
        try await Self.populate(service, appID, devices: 100)
        let (buffers, continuation) = AsyncStream<ByteBuffer>.makeStream(bufferingPolicy: .bufferingOldest(10))
        let kept = await Self.ticking(service) {
            await ChangeFeedRoutes.produceChanges(
                feed: service.push, reads: StreamReads(limit: 1), appID: appID, from: .start,
                to: ServerSentEvents.Sink(continuation: continuation))
        }
        #expect(!kept)
        continuation.finish()
        var buffered = 0
        for await _ in buffers { buffered += 1 }
        #expect(buffered == 10)
        #expect(service.push.hub.count == 0, "the dropped stream's subscription is gone")
        await pool.close()
    }

    @Test("From the start, then from any message's id: every event once, in global order, each stream's versions in order")
    func resume() async throws {
        let pool = try await TestDatabase.pool(size: 2)
        let service = GateService(pool: pool, logger: TestDatabase.logger)
        let appID = try await TestDatabase.makeApp(pool)
        try await Self.populate(service, appID, devices: 40)
        func read(from start: LogPosition, expecting count: Int) async throws -> [String] {
            let (buffers, continuation) = AsyncStream<ByteBuffer>.makeStream(bufferingPolicy: .bufferingOldest(1000))
            let producer = Task {
                await ChangeFeedRoutes.produceChanges(
                    feed: service.push, reads: StreamReads(limit: 1), appID: appID, from: start,
                    to: ServerSentEvents.Sink(continuation: continuation))
            }
            var messages: [String] = []
            await Self.ticking(service) {
                for await buffer in buffers {
                    // A quiet stream sends a comment every 5 s; on a slow machine another
                    // test's transaction can hold the events back that long.
                    let message = String(buffer: buffer)
                    if message.hasPrefix(":") { continue }
                    messages.append(message)
                    if messages.count == count { break }
                }
                producer.cancel()
                _ = await producer.value  // a tick wakes it to see the cancellation
            }
            return messages
        }
        let all = try await read(from: .start, expecting: 120)
        #expect(all.count == 120 && Set(all).count == 120)
        // Each message carries the status and the effective accuracy after its event.
        // Location Services off at versions 1 and 3 (denied), on at 2 (notDetermined).
        #expect(all.allSatisfy { message in
            let status = message.contains(#""version":2"#) ? "notDetermined" : "denied"
            return message.contains(#""accuracy":"full""#) && message.contains(#""status":"\#(status)""#)
        }, "\(all.first ?? "")")
        let ids = all.compactMap { $0.split(separator: "\n").first.map { String($0.dropFirst(4)) } }
        let positions = ids.compactMap(LogPosition.init(eventID:))
        #expect(positions == positions.sorted() && positions.count == 120)
        for index in stride(from: 0, to: 119, by: 17) {
            let rest = try await read(from: positions[index], expecting: 119 - index)
            #expect(rest == Array(all[(index + 1)...]))
        }
        // A device the person left at approximate location: its messages say `reduced`.
        let last = try #require(positions.last)
        _ = try await service.events.ingest(appID: appID, submissions: [
            EventSubmission(
                id: UUID(), userId: "u", deviceId: "reduced", occurredAt: Date(timeIntervalSince1970: 1_795_341_600),
                event: .statusObserved(.authorizedWhenInUse, accuracy: .reduced)),
        ])
        let reduced = try await read(from: last, expecting: 1)
        #expect(reduced.first?.contains(#""accuracy":"reduced","deviceId":"reduced","status":"authorizedWhenInUse""#) == true, "\(reduced)")
        await pool.close()
    }
}
