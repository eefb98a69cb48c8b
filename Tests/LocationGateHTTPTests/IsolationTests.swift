import EventLog
import Foundation
import HTTPTypes
import LocationAuthorization
import LocationGateService
import LocationGateTestSupport
import PostgresClient
import Testing

/// SPEC §1 and §5: a request that a client got wrong fails alone; it never fails another
/// request, least of all another app's.
@Suite("Isolation: one tenant's fault never fails another's request", .timeLimit(.minutes(2)))
struct IsolationTests {
    static func submission(user: String, device: String) -> EventSubmission {
        EventSubmission(
            id: UUID(), userId: user, deviceId: device, occurredAt: Date(timeIntervalSince1970: 1_795_341_600),
            event: .appStateChanged(.foreground, backgroundIndicator: false))
    }

    @Test("A value the database refuses fails its own request only, though it shared a group commit with others")
    func databaseRefusal() async throws {
        // A database of its own, with a trigger standing in for a check the validation missed.
        let configuration = try await TestDatabase.create(prefix: "locgate_isolation")
        // The queue's timeout (twice the pool's wait) is not what this test is about: a long one keeps
        // a slow machine's group commits from being refused `overloaded` before they ran.
        let pool = PostgresConnectionPool(configuration: configuration, size: 4, waitTimeout: .seconds(60), logger: TestDatabase.logger)
        try await pool.withConnection { connection in
            try connection.execute(
                """
                CREATE FUNCTION refuse_poison() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    IF NEW.user_id = 'poison' THEN RAISE EXCEPTION 'poisoned' USING ERRCODE = '22023'; END IF;
                    RETURN NEW;
                END $$;
                CREATE TRIGGER events_refuse_poison BEFORE INSERT ON events FOR EACH ROW EXECUTE FUNCTION refuse_poison();
                """)
        }
        let service = GateService(pool: pool, logger: TestDatabase.logger)
        let clean = try await TestDatabase.makeApp(pool, name: "clean")
        let noisy = try await TestDatabase.makeApp(pool, name: "noisy")
        enum Sender: Sendable { case clean, noisyFine, poison }
        let outcomes = await withTaskGroup(of: (Sender, Result<EventResult, ServiceError>).self) { group in
            for index in 0..<180 {
                let sender: Sender = index % 3 == 0 ? .clean : index % 3 == 1 ? .noisyFine : .poison
                let app = sender == .clean ? clean : noisy
                let user = sender == .poison ? "poison" : "u"
                group.addTask {
                    do {
                        let results = try await service.events.ingest(appID: app, submissions: [Self.submission(user: user, device: "d\(index % 7)")])
                        return (sender, .success(results[0]))
                    } catch {
                        return (sender, .failure(ServiceError.from(error)))
                    }
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        for (sender, outcome) in outcomes {
            switch (sender, outcome) {
            case (.clean, .success), (.noisyFine, .success): break
            case (.poison, .failure(let error)): #expect(error.code == ServiceError.Code.internalError)
            default: Issue.record("\(sender): \(outcome)")
            }
        }
        let stored = try await pool.query(
            "SELECT count(*) FILTER (WHERE user_id = 'poison'), count(*) FROM events").first
        #expect(try stored?.decode(0, as: Int.self) == 0)
        #expect(try stored?.decode(1, as: Int.self) == 120)
        // Versions have no gaps: what was refused took no version.
        let gaps = try await pool.query(
            "SELECT count(*) FROM streams s WHERE version <> (SELECT count(*) FROM events e WHERE e.app_id = s.app_id AND e.user_id = s.user_id AND e.device_id = s.device_id)")
        #expect(try gaps.first?.decode(0, as: Int.self) == 0)
        await pool.close()
    }

    @Test("A noisy tenant's bad requests beside a clean tenant's: the clean one sees only 200s")
    func noisyNeighbour() async throws {
        try await APIHarness.run { api in
            let (_, cleanKey) = try await api.createApp("clean")
            let (_, noisyKey) = try await api.createApp("noisy")
            let noise: [String] = [
                eventJSON("contextReported", #"{"appVersion": "a\u0000b"}"#, device: "n"),
                eventJSON("promptResponded", #"{"choice": "allowOnce"}"#, device: "n"),
                eventJSON("appStateChanged", #"{"state": "foreground"}"#, device: "n", expectedVersion: 999),
                eventJSON("contextReported", #"{"appVersion": "\#(String(repeating: "x", count: 65))"}"#, device: "n"),
                eventJSON("settingsChanged", #"{"authorization": "sometimes"}"#, device: "n"),
            ]
            let results = await withTaskGroup(of: (Bool, HTTPResponse.Status, String?).self) { group in
                for index in 0..<200 {
                    group.addTask {
                        if index % 2 == 0 {
                            let reply = try? await api.append(cleanKey, [eventJSON("appStateChanged", #"{"state": "foreground"}"#, device: "c\(index % 5)")])
                            return (true, reply?.status ?? .internalServerError, reply?.errorCode)
                        }
                        let body = index % 11 == 1 ? "{\"events\": [" : #"{"events": [\#(noise[index % noise.count])]}"#
                        let reply = try? await api.call(.post, "/v1/events", key: noisyKey, json: body)
                        return (false, reply?.status ?? .internalServerError, reply?.errorCode)
                    }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
            let clean = results.filter(\.0)
            #expect(clean.count == 100 && clean.allSatisfy { $0.1 == .ok }, "\(clean.filter { $0.1 != .ok })")
            let noisy = results.filter { !$0.0 }
            #expect(noisy.allSatisfy { [.badRequest, .conflict, .unprocessableContent].contains($0.1) }, "\(noisy.map(\.1))")
            let history = try await api.call(.get, "/v1/users/u-1/devices/n/history", key: noisyKey)
            #expect((history.json["entries"] as? [Any])?.isEmpty == true)
        }
    }
}
