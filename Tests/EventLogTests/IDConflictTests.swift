import EventLog
import Foundation
import LocationGateTestSupport
import PostgresClient
import Testing

/// SPEC §14: an event whose id is stored already with other content (user, device, type, the
/// data as stored, occurredAt as an instant) is an `idConflict` naming the first such event, and
/// the batch stores nothing; the same content again is a duplicate.
@Suite("Event log: an id stored with other content", .timeLimit(.minutes(2)))
struct IDConflictTests {
    /// The conflict an append ends with, or nil when it was appended.
    private static func conflict(_ fixture: LogFixture, _ events: [NewEvent]) async -> (index: Int, field: String)? {
        do {
            _ = try await fixture.log.append(appID: fixture.appID, events: events)
            return nil
        } catch {
            guard case .idConflict(let index, let id, let field) = error else {
                Issue.record("unexpected \(error)")
                return nil
            }
            if events.indices.contains(index) {
                #expect(id == events[index].id)
            } else {
                Issue.record("index \(index) is outside the batch")
            }
            return (index, field)
        }
    }

    @Test("Each field that differs is a conflict at its event's index, and nothing of the batch is stored")
    func eachField() async throws {
        let fixture = try await LogFixture.make()
        let id = UUID()
        let stored = event("u1", "d1", id: id)
        _ = try await fixture.log.append(appID: fixture.appID, events: [stored])
        var otherData = stored
        otherData.data = #"{"enabled": false}"#
        var otherTime = stored
        otherTime.occurredAt = stored.occurredAt.addingTimeInterval(0.001)
        let changed: [(NewEvent, String)] = [
            (event("u2", "d1", id: id), "userId"),
            (event("u1", "d2", id: id), "deviceId"),
            (event("u1", "d1", id: id, type: "restrictionChanged"), "type"),
            (otherData, "data"),
            (otherTime, "occurredAt"),
        ]
        for (conflicting, field) in changed {
            let found = await Self.conflict(fixture, [event("u1", "d3"), conflicting, event("u1", "d1")])
            #expect(found?.index == 1 && found?.field == field, "\(field): \(String(describing: found))")
        }
        #expect(try await fixture.count() == 1, "no conflicting batch stored anything")
        #expect(try await fixture.log.version(of: fixture.stream("u1", "d3")) == 0)
        await fixture.pool.close()
    }

    @Test("The first conflicting event by index is named, whatever order the ids were stored in")
    func firstIndex() async throws {
        let fixture = try await LogFixture.make()
        let (first, second) = (UUID(), UUID())
        _ = try await fixture.log.append(appID: fixture.appID, events: [event("u1", "d1", id: second), event("u1", "d1", id: first)])
        let found = await Self.conflict(fixture, [
            event("u1", "d1", id: second), event("u1", "d2"), event("u1", "d1", id: first, type: "restrictionChanged"),
            event("u1", "d1", id: second, type: "restrictionChanged"),
        ])
        #expect(found?.index == 2 && found?.field == "type", "\(String(describing: found))")
        await fixture.pool.close()
    }

    @Test("The same content again is a duplicate: data compared as stored JSON, occurredAt as an instant")
    func sameContent() async throws {
        let fixture = try await LogFixture.make()
        let id = UUID()
        var stored = event("u1", "d1", id: id)
        stored.data = #"{"enabled": true, "reason": "x"}"#
        _ = try await fixture.log.append(appID: fixture.appID, events: [stored])
        // Other spacing and key order: the same jsonb. The same Date is the same instant.
        var same = stored
        same.data = #"{"reason":"x","enabled":true}"#
        same.expectedVersion = 7
        let results = try await fixture.log.append(appID: fixture.appID, events: [same, event("u1", "d1")])
        #expect(results.map(\.duplicate) == [true, false])
        #expect(results.map(\.version) == [1, 2])
        #expect(try await fixture.count() == 2)
        await fixture.pool.close()
    }
}
