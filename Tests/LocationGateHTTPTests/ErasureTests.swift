import Foundation
import HTTPTypes
import LocationGateService
import LocationGateTestSupport
import PostgresClient
import Testing

/// SPEC §13's erasure through the API, against a real PostgreSQL: what is gone, what stays,
/// who may ask, and appends racing it.
@Suite("Erasure: a person forgotten, the aggregates kept", .timeLimit(.minutes(3)))
struct ErasureTests {
    /// A long random user id: if any copy of it survived, a search of the dump would find it.
    static func personID() -> String { "person-" + UUID().uuidString.lowercased() + "-" + UUID().uuidString.lowercased() }

    static func events(_ user: String, _ device: String, day: String = "2026-11-22") -> [String] {
        [
            eventJSON("contextReported", #"{"platform": "iOS", "osVersion": "17.4", "appVersion": "3.0"}"#, user: user, device: device, at: "\(day)T08:00:00Z"),
            eventJSON("authorizationRequested", #"{"request": "whenInUse"}"#, user: user, device: device, at: "\(day)T09:00:00Z"),
            eventJSON("promptResponded", #"{"choice": "allowWhileUsing"}"#, user: user, device: device, at: "\(day)T09:01:00Z"),
        ]
    }

    /// Drives the erasure's phases as a server's worker would, until its record says done.
    static func waitDone(_ api: APIClient, _ service: GateService, _ key: String, _ id: String) async throws -> [String: Any] {
        var record: [String: Any] = [:]
        let done = try await waitUntil(timeout: .seconds(10)) {
            try await service.erasure.performNextErasure()
            try await service.erasure.completeErasures()
            record = try await api.call(.get, "/v1/erasures/\(id)", key: key).json
            return record["status"] as? String == "done"
        }
        #expect(done, "the erasure is not done within 10 s: \(record)")
        return record
    }

    @Test("Erasing a person: 202 at once, done with its counts, nothing left of the person, aggregates unchanged, verify clean")
    func erase() async throws {
        try await APIHarness.runWithService(privateDatabase: "erasure") { api, service in
            let (appID, admin) = try await api.createApp()
            let read = try await api.createKey(admin, scope: "read")
            try await api.putFeature(admin, "nearby", #"{"requires": "whenInUse", "services": ["standard"]}"#)
            let person = Self.personID()
            let other = "someone-else"
            var batch = Self.events(person, "phone") + Self.events(person, "tablet") + Self.events(other, "phone")
            batch.append(eventJSON("statusObserved", #"{"status": "authorizedWhenInUse"}"#, user: person, device: "phone", at: "2026-11-22T10:00:00Z"))
            #expect(try await api.append(admin, batch).status == .ok)
            // The gate is cached, the figures are counted.
            #expect(try await api.call(.get, "/v1/users/\(person)/devices/phone/gates/nearby", key: read).json["enabled"] as? Bool == true)
            let promptsBefore = try await api.call(.get, "/v1/analytics/prompts", key: read).text
            let escalationsBefore = try await api.call(.get, "/v1/analytics/escalations", key: read).text

            // Only the app's admin key erases.
            #expect(try await api.call(.delete, "/v1/users/\(person)", key: read).status == .forbidden)
            #expect(try await api.call(.delete, "/v1/users/not%20valid", key: admin).status == .unprocessableContent)
            let accepted = try await api.call(.delete, "/v1/users/\(person)", key: admin)
            #expect(accepted.status == .accepted, "\(accepted.text)")
            let id = try #require(accepted.json["id"] as? String)
            #expect(["pending", "done"].contains(accepted.json["status"] as? String ?? ""))
            #expect(!accepted.text.contains(person))
            let record = try await Self.waitDone(api, service, admin, id)
            #expect(record["events"] as? Int == 7 && record["devices"] as? Int == 2, "\(record)")
            #expect(record["requestedAt"] is String && record["completedAt"] is String)
            // Another key of this app, or another app's admin key: 404, as for no erasure.
            #expect(try await api.call(.get, "/v1/erasures/\(id)", key: read).status == .notFound)
            let (_, stranger) = try await api.createApp("stranger")
            #expect(try await api.call(.get, "/v1/erasures/\(id)", key: stranger).status == .notFound)

            // Nothing of the person: state, history, gates (the cache too).
            for device in ["phone", "tablet"] {
                let state = try await api.call(.get, "/v1/users/\(person)/devices/\(device)/state", key: read)
                #expect(state.json["version"] as? Int == 0)
                let history = try await api.call(.get, "/v1/users/\(person)/devices/\(device)/history", key: read)
                #expect((history.json["entries"] as? [Any])?.isEmpty == true)
            }
            let gate = try await api.call(.get, "/v1/users/\(person)/devices/phone/gates/nearby", key: read)
            #expect(gate.json["enabled"] as? Bool == false && gate.json["version"] as? Int == 0, "\(gate.text)")
            // The other person is untouched.
            #expect(try await api.call(.get, "/v1/users/\(other)/devices/phone/state", key: read).json["version"] as? Int == 3)
            // Aggregates that name no one are unchanged; the present no longer counts the person.
            #expect(try await api.call(.get, "/v1/analytics/prompts", key: read).text == promptsBefore)
            #expect(try await api.call(.get, "/v1/analytics/escalations", key: read).text == escalationsBefore)
            let statuses = (try await api.call(.get, "/v1/analytics/statuses", key: read).json["rows"] as? [[String: Any]]) ?? []
            #expect(statuses.reduce(0) { $0 + ($1["count"] as? Int ?? 0) } == 1, "\(statuses)")
            // Replay and verify agree with what is left.
            // (This app's: other suites tamper with theirs.)
            let differences = try await service.audit.replay(appID: UUID(uuidString: appID), logger: TestDatabase.logger).verify()
            #expect(differences.isEmpty, "\(differences.prefix(5))")

            // The person may come back, as new: the same event ids are new again.
            let again = try await api.append(admin, Array(batch.prefix(3)))
            let results = again.json["results"] as? [[String: Any]] ?? []
            #expect(results.map { $0["duplicate"] as? Bool } == [false, false, false] && results.first?["version"] as? Int == 1, "\(again.text)")
        }
    }

    @Test("An unknown user gets the same answer, with nothing erased")
    func unknownUser() async throws {
        try await APIHarness.runWithService(privateDatabase: "erasure") { api, service in
            let (_, admin) = try await api.createApp()
            let accepted = try await api.call(.delete, "/v1/users/\(Self.personID())", key: admin)
            #expect(accepted.status == .accepted)
            let record = try await Self.waitDone(api, service, admin, accepted.json["id"] as? String ?? "")
            #expect(record["events"] as? Int == 0 && record["devices"] as? Int == 0)
        }
    }

    @Test("A pg_dump of the database holds no trace of an erased person's id: as text, hex or base64")
    func dumpHoldsNoTrace() async throws {
        try await APIHarness.runWithService(privateDatabase: "erasure") { api, service in
            let (_, admin) = try await api.createApp()
            let person = Self.personID()
            #expect(try await api.append(admin, Self.events(person, "watch-\(person.suffix(12))")).status == .ok)
            let accepted = try await api.call(.delete, "/v1/users/\(person)", key: admin)
            _ = try await Self.waitDone(api, service, admin, accepted.json["id"] as? String ?? "")
            let dump = try await Self.pgDump(database: service.health.databaseName)
            #expect(dump.count > 10_000, "the dump is not a dump")
            let bytes = Data(person.utf8)
            for form in [person, bytes.map { String(format: "%02x", $0) }.joined(), bytes.base64EncodedString()] {
                #expect(!dump.contains(form), "the dump holds \(form.prefix(24))...")
            }
        }
    }

    @Test("Appends racing an erasure are erased whole or kept whole, never half")
    func racingAppends() async throws {
        try await APIHarness.runWithService(privateDatabase: "erasure") { api, service in
            let (appID, admin) = try await api.createApp()
            let person = Self.personID()
            #expect(try await api.append(admin, Self.events(person, "a")).status == .ok)
            // Each batch writes one event to each of two devices.
            let batches = (0..<20).map { index in
                [eventJSON("locationServicesChanged", #"{"enabled": \#(index % 2 == 0)}"#, user: person, device: "a"),
                 eventJSON("locationServicesChanged", #"{"enabled": \#(index % 2 == 0)}"#, user: person, device: "b")]
            }
            let id = try await withThrowingTaskGroup(of: String?.self) { group in
                for batch in batches {
                    group.addTask { _ = try await api.append(admin, batch); return nil }
                }
                group.addTask {
                    let accepted = try await api.call(.delete, "/v1/users/\(person)", key: admin)
                    return accepted.json["id"] as? String
                }
                var id: String?
                for try await value in group { if let value { id = value } }
                return id
            }
            _ = try await Self.waitDone(api, service, admin, id ?? "")
            // Whatever survived came after the erasure: each batch is there whole or not at all.
            let a = (try await api.call(.get, "/v1/users/\(person)/devices/a/history", key: admin).json["entries"] as? [[String: Any]]) ?? []
            let b = (try await api.call(.get, "/v1/users/\(person)/devices/b/history", key: admin).json["entries"] as? [[String: Any]]) ?? []
            #expect(a.count == b.count, "device a kept \(a.count) events, device b \(b.count)")
            #expect(a.allSatisfy { $0["type"] as? String == "locationServicesChanged" }, "the first events were erased")
            let differences = try await service.audit.replay(appID: UUID(uuidString: appID), logger: TestDatabase.logger).verify()
            #expect(differences.isEmpty, "\(differences.prefix(5))")
        }
    }

    /// `pg_dump` of a test database, as text.
    static func pgDump(database: String?) async throws -> String {
        let server = try TestDatabase.serverConfiguration().connectionString
        // The server's URL (postgresql://user@host:port/database) with this test database's name.
        var url = server
        if server.contains("://"), let slash = server.range(of: "/", options: .backwards), let name = database {
            url = String(server[..<slash.upperBound]) + name
        }
        let dump = try ChildProcess.run("pg_dump", ["--no-owner", "--dbname", url])
        return String(decoding: dump.output, as: UTF8.self)
    }
}

/// Erasure across two real `locgate serve` processes: their workers perform it, their
/// followers acknowledge it, and once it is done the other process no longer serves the person.
@Suite("Erasure across two server processes", .timeLimit(.minutes(3)))
struct ErasureTwoProcessTests {
    @Test("Done within 10 s by the servers themselves; the second process stops serving the erased device")
    func twoServers() async throws {
        let configuration = try await TestDatabase.configuration()
        let url = try TestDatabase.serverConfiguration().connectionString
        let name = configuration.overrides["dbname"] ?? ""
        let first = try LocgateServer(port: try #require(LocgateServer.freePort()), databaseURL: url, databaseName: name)
        defer { first.stop() }
        let second = try LocgateServer(port: try #require(LocgateServer.freePort()), databaseURL: url, databaseName: name)
        defer { second.stop() }
        let firstReady = await LocgateServer.waitReady(first.port)
        let secondReady = await LocgateServer.waitReady(second.port)
        try #require(firstReady && secondReady, "\(first.errorOutput)\(second.errorOutput)")
        let (_, app) = try await LocgateServer.request("POST", first.port, "/v1/apps", key: LocgateServer.adminToken, json: #"{"name": "erase"}"#)
        let key = app["apiKey"] as? String ?? ""
        _ = try await LocgateServer.request("PUT", first.port, "/v1/features/nearby", key: key, json: #"{"requires": "whenInUse"}"#)
        let person = ErasureTests.personID()
        let (appended, _) = try await LocgateServer.request(
            "POST", first.port, "/v1/events", key: key, json: #"{"events": [\#(ErasureTests.events(person, "phone").joined(separator: ","))]}"#)
        #expect(appended == 200)
        // The second process serves (and caches) the device.
        let (_, cached) = try await LocgateServer.request("GET", second.port, "/v1/users/\(person)/devices/phone/gates/nearby", key: key)
        #expect(cached["enabled"] as? Bool == true && cached["version"] as? Int == 3)
        let (accepted, erasure) = try await LocgateServer.request("DELETE", first.port, "/v1/users/\(person)", key: key)
        #expect(accepted == 202)
        let id = erasure["id"] as? String ?? ""
        var record: [String: Any] = [:]
        let done = try await waitUntil(timeout: .seconds(10)) {
            record = try await LocgateServer.request("GET", second.port, "/v1/erasures/\(id)", key: key).1
            return record["status"] as? String == "done"
        }
        #expect(done && record["events"] as? Int == 3, "\(record)")
        let (_, gate) = try await LocgateServer.request("GET", second.port, "/v1/users/\(person)/devices/phone/gates/nearby", key: key)
        #expect(gate["enabled"] as? Bool == false && gate["version"] as? Int == 0, "\(gate)")
    }
}
