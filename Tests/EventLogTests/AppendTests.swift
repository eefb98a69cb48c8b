import EventLog
import Foundation
import LocationGateTestSupport
import PostgresClient
import Testing

@Suite("Event log: append, versions, idempotency, atomicity", .timeLimit(.minutes(2)))
struct AppendTests {
    @Test("Appends get versions 1..n per stream and read back in order")
    func appendAndRead() async throws {
        let fixture = try await LogFixture.make()
        let results = try await fixture.log.append(appID: fixture.appID, events: [event(), event(), event("u1", "d2"), event()])
        #expect(results.map(\.version) == [1, 2, 1, 3])
        #expect(results.allSatisfy { !$0.duplicate })
        let stored = try await fixture.log.readStream(fixture.stream("u1", "d1"))
        #expect(stored.map(\.version) == [1, 2, 3])
        #expect(stored.map(\.id) == [results[0].id, results[1].id, results[3].id])
        #expect(stored.first?.type == "locationServicesChanged")
        #expect(stored.first?.occurredAt == Date(timeIntervalSince1970: 1_795_341_600))
        #expect(try await fixture.log.version(of: fixture.stream("u1", "d1")) == 3)
        #expect(try await fixture.log.version(of: fixture.stream("u1", "none")) == 0)
        #expect(try await fixture.log.readStream(fixture.stream("u1", "d1"), afterVersion: 2).map(\.version) == [3])
        await fixture.pool.close()
    }

    @Test("expectedVersion: 0 for a new stream, a conflict otherwise, and nothing stored")
    func expectedVersion() async throws {
        let fixture = try await LogFixture.make()
        _ = try await fixture.log.append(appID: fixture.appID, events: [event(expectedVersion: 0), event(expectedVersion: 1)])
        do {
            _ = try await fixture.log.append(appID: fixture.appID, events: [event(expectedVersion: 1)])
            Issue.record("expected a conflict")
        } catch {
            guard case .versionConflict(let index, _, let expected, let actual) = error else {
                Issue.record("unexpected \(error)")
                return
            }
            #expect(index == 0 && expected == 1 && actual == 2)
        }
        #expect(try await fixture.count() == 2)
        await fixture.pool.close()
    }

    @Test("A batch is atomic: a conflict in its third event stores none of it")
    func batchAtomicity() async throws {
        let fixture = try await LogFixture.make()
        let batch = [event("a", "1"), event("b", "1"), event("a", "1", expectedVersion: 5), event("c", "1")]
        await #expect(throws: EventLogError.self) { try await fixture.log.append(appID: fixture.appID, events: batch) }
        #expect(try await fixture.count() == 0)
        #expect(try await fixture.log.version(of: fixture.stream("a", "1")) == 0)
        await fixture.pool.close()
    }

    @Test("A projector that throws rolls the whole batch back")
    func projectorRejection() async throws {
        struct Refuse: AppendProjector {
            struct No: Error {}
            func read(_ streams: [StreamKey]) -> PostgresQuery? { nil }
            func project(_ appends: [StreamAppend], read: PostgresRows?, on connection: PostgresConnection) throws -> [[String?]] {
                throw EventLogError.rejected(index: 1, reason: No())
            }
        }
        let fixture = try await LogFixture.make()
        do {
            _ = try await fixture.log.append(appID: fixture.appID, events: [event(), event()], projector: Refuse())
            Issue.record("expected a rejection")
        } catch {
            guard case .rejected(let index, _) = error else { Issue.record("unexpected \(error)"); return }
            #expect(index == 1)
        }
        #expect(try await fixture.count() == 0)
        await fixture.pool.close()
    }

    @Test("Outcomes from the projector are stored with the event and returned for duplicates")
    func outcomes() async throws {
        struct Echo: AppendProjector {
            func read(_ streams: [StreamKey]) -> PostgresQuery? { nil }
            func project(_ appends: [StreamAppend], read: PostgresRows?, on connection: PostgresConnection) throws -> [[String?]] {
                appends.map { append in append.events.map { #"{"version": \#($0.version), "from": \#(append.previousVersion)}"# } }
            }
        }
        let fixture = try await LogFixture.make()
        let id = UUID()
        let first = try await fixture.log.append(appID: fixture.appID, events: [event(), event(id: id)], projector: Echo())
        #expect(first[1].outcome == #"{"version": 2, "from": 0}"#)
        let again = try await fixture.log.append(appID: fixture.appID, events: [event(id: id)], projector: Echo())
        #expect(again[0].duplicate && again[0].version == 2)
        #expect(again[0].outcome == #"{"from": 0, "version": 2}"#, "jsonb normalises key order")
        await fixture.pool.close()
    }

    @Test("The projector's read covers each stream of the batch once, and its rows reach project")
    func projectorRead() async throws {
        struct Heads: AppendProjector {
            func read(_ streams: [StreamKey]) -> PostgresQuery? {
                "SELECT d, \(Int64(streams.count)) FROM unnest(\(PostgresArray(streams.map(\.deviceID)))) AS d ORDER BY d"
            }
            func project(_ appends: [StreamAppend], read: PostgresRows?, on connection: PostgresConnection) throws -> [[String?]] {
                let devices: [String] = try (read ?? PostgresRows(columns: [], values: [], affectedRows: 0)).map { try $0.decode(0) }
                return appends.map { append in append.events.map { _ in #"{"read": "\#(devices.joined(separator: ","))"}"# } }
            }
        }
        let fixture = try await LogFixture.make()
        let results = try await fixture.log.append(
            appID: fixture.appID, events: [event("a", "2"), event("a", "1"), event("a", "2")], projector: Heads())
        #expect(results.map(\.outcome) == Array(repeating: #"{"read": "1,2"}"#, count: 3))
        await fixture.pool.close()
    }

    @Test("Idempotency: a stored id returns the stored result, whatever expectedVersion says")
    func idempotency() async throws {
        let fixture = try await LogFixture.make()
        let id = UUID()
        let first = try await fixture.log.append(appID: fixture.appID, events: [event(id: id, expectedVersion: 0)])
        let again = try await fixture.log.append(appID: fixture.appID, events: [event(id: id, expectedVersion: 7), event()])
        #expect(again[0].duplicate && again[0].version == first[0].version)
        #expect(!again[1].duplicate && again[1].version == 2)
        #expect(try await fixture.count() == 2)
        // Ids are per app: another app may use the same id.
        let other = try await TestDatabase.makeApp(fixture.pool)
        let elsewhere = try await fixture.log.append(appID: other, events: [event(id: id)])
        #expect(!elsewhere[0].duplicate)
        await fixture.pool.close()
    }

    @Test("Idempotency under a race: concurrent retries of one id store it once")
    func concurrentRetries() async throws {
        let fixture = try await LogFixture.make(poolSize: 8)
        for _ in 0..<5 {
            let id = UUID()
            let results = try await withThrowingTaskGroup(of: AppendResult.self) { group in
                for _ in 0..<8 {
                    group.addTask { try await fixture.log.append(appID: fixture.appID, events: [event("race", "d", id: id)])[0] }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(results.filter { !$0.duplicate }.count == 1)
            #expect(Set(results.map(\.version)).count == 1)
        }
        #expect(try await fixture.count() == 5)
        await fixture.pool.close()
    }
}
