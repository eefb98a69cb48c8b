import Foundation
import LocationGateTestSupport
import PostgresClient
import Synchronization
import Testing

@testable import EventLog

@Suite("Event log: the global order never skips a late commit", .timeLimit(.minutes(3)))
struct GlobalOrderTests {
    /// Many writers, some of which hold their transaction open after inserting (so that a row
    /// with a lower position commits after rows with higher ones), and a reader that pages
    /// through the log the whole time. Paging on position alone loses events here.
    @Test("Concurrent writers with late commits: the reader sees every event exactly once")
    func concurrentWritersAndReader() async throws {
        let writers = 8
        let batchesPerWriter = 25
        let pool = try await TestDatabase.pool(size: writers + 2)
        let appID = try await TestDatabase.makeApp(pool)
        let log = EventLog(pool: pool, logger: TestDatabase.logger)
        let start = try await Self.currentEnd(pool)

        let horizonTarget = Mutex<String?>(nil)

        async let seen: [RecordedEvent] = {
            var position = start
            var seen: [RecordedEvent] = []
            while true {
                // The horizon is checked before the read, so an empty page after it means done.
                let target = horizonTarget.withLock { $0 }
                var passed = false
                if let target { passed = try await Self.horizonPassed(pool, target) }
                let page = try await log.read(after: position, limit: 37)
                seen += page.filter { $0.stream.appID == appID }
                // Pages strictly advance: a reader that went back would see events twice.
                #expect(zip(page, page.dropFirst()).allSatisfy { $0.logPosition < $1.logPosition })
                #expect(page.first.map { $0.logPosition > position } ?? true)
                if let last = page.last { position = last.logPosition }
                // Done once the writers are done, every transaction that was running then has
                // ended (other tests' too), and a page comes back empty.
                if page.isEmpty && passed { break }
            }
            return seen
        }()

        try await withThrowingTaskGroup(of: Void.self) { group in
            for writer in 0..<writers {
                group.addTask {
                    for batch in 0..<batchesPerWriter {
                        // Writers share streams, so appends to one stream also race.
                        let events = (0..<3).map { _ in event("u\((writer + batch) % 4)", "d\(batch % 2)") }
                        try await pool.withConnection { connection in
                            try connection.transaction { connection in
                                _ = try EventLog.appendInTransaction(appID: appID, events: events, projector: nil, on: connection)
                                // Hold some transactions open after their rows got positions.
                                if (writer + batch) % 4 == 0 {
                                    try connection.query("SELECT pg_sleep(\(Double.random(in: 0.005...0.03)))")
                                }
                            }
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        let target = try await pool.query("SELECT pg_snapshot_xmax(pg_current_snapshot())::text").first?.decode(0, as: String.self)
        horizonTarget.withLock { $0 = target ?? "0" }
        let events = try await seen
        let expected = writers * batchesPerWriter * 3
        #expect(events.count == expected)
        #expect(Set(events.map(\.id)).count == expected, "no event twice")
        // The global order is consistent with every stream's version order.
        var lastVersion: [StreamKey: Int64] = [:]
        for event in events {
            #expect(event.version == (lastVersion[event.stream] ?? 0) + 1, "stream \(event.stream) out of order")
            lastVersion[event.stream] = event.version
        }
        await pool.close()
    }

    @Test("A transaction still open holds back every later event until it commits")
    func horizon() async throws {
        let pool = try await TestDatabase.pool(size: 2)
        // A pool of one connection: the transaction opened in one lease is still open in the next.
        let slowPool = PostgresConnectionPool(configuration: try await TestDatabase.configuration(), size: 1, logger: TestDatabase.logger)
        let appID = try await TestDatabase.makeApp(pool)
        let log = EventLog(pool: pool, logger: TestDatabase.logger)
        let start = try await Self.currentEnd(pool)
        try await slowPool.withConnection { connection in
            try connection.execute("BEGIN")
            _ = try EventLog.appendInTransaction(appID: appID, events: [event("slow", "d")], projector: nil, on: connection)
        }
        _ = try await log.append(appID: appID, events: [event("fast", "d")])
        let early = try await log.read(after: start, limit: 1000).filter { $0.stream.appID == appID }
        #expect(early.isEmpty, "the fast event must wait for the older open transaction")
        try await slowPool.withConnection { try $0.execute("COMMIT") }
        // Other tests' transactions may hold the horizon too: wait for them.
        var late: [RecordedEvent] = []
        let bothReadable = try await waitUntil(timeout: .seconds(30), poll: .milliseconds(20)) {
            late = try await log.read(after: start, limit: 10_000).filter { $0.stream.appID == appID }
            return late.count >= 2
        }
        #expect(bothReadable)
        #expect(late.map(\.stream.userID) == ["slow", "fast"])
        await slowPool.close()
        await pool.close()
    }

    /// Whether every transaction older than `target` (an xid8) has ended.
    static func horizonPassed(_ pool: PostgresConnectionPool, _ target: String) async throws -> Bool {
        try await pool.query("SELECT pg_snapshot_xmin(pg_current_snapshot()) >= \(target)::xid8").first?.decode(0) ?? false
    }

    /// The position after the last readable event, so a test reads only what it writes.
    static func currentEnd(_ pool: PostgresConnectionPool) async throws -> LogPosition {
        let rows = try await pool.query(
            "SELECT tx_id::text, position FROM events ORDER BY events.tx_id DESC, events.position DESC LIMIT 1")
        guard let row = rows.first else { return .start }
        return LogPosition(transactionID: try row.decode(0), position: try row.decode(1))
    }
}
