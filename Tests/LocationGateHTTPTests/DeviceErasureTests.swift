import Foundation
import HTTPTypes
import LocationGateService
import LocationGateTestSupport
import PostgresClient
import Testing

/// SPEC §13's erasure of one device through the API, against a real PostgreSQL: the device is
/// gone from every table, the person's other devices and everyone else stay, and the record,
/// the 202 and the refusals are a person's erasure's.
@Suite("Device erasure: one device forgotten, the person's other devices kept", .timeLimit(.minutes(3)))
struct DeviceErasureTests {
    /// A long random device id: if any copy of it survived, a search of the dump would find it.
    static func deviceID() -> String { "device-" + UUID().uuidString.lowercased() + "-" + UUID().uuidString.lowercased() }

    static func count(_ pool: PostgresConnectionPool, _ query: PostgresQuery) async throws -> Int64 {
        try await pool.query(query).first?.decode(0, as: Int64.self) ?? -1
    }

    @Test("Erasing a device: 202 at once, done with its counts; no row of any table holds the device, a pg_dump holds no trace of its id; the person's other device, its state, gates and history, and other people are untouched; aggregates unchanged; verify clean")
    func eraseDevice() async throws {
        try await APIHarness.runWithDatabase(privateDatabase: "device_erasure") { api, service, pool in
            let (appID, admin) = try await api.createApp()
            let read = try await api.createKey(admin, scope: "read")
            try await api.putFeature(admin, "nearby", #"{"requires": "whenInUse", "services": ["standard"]}"#)
            let person = ErasureTests.personID()
            let erased = Self.deviceID()
            let kept = "tablet"
            var batch = ErasureTests.events(person, erased) + ErasureTests.events(person, kept) + ErasureTests.events("someone-else", erased)
            batch.append(eventJSON("statusObserved", #"{"status": "authorizedWhenInUse"}"#, user: person, device: erased, at: "2026-11-22T10:00:00Z"))
            #expect(try await api.append(admin, batch).status == .ok)
            // The gate is cached; the figures are counted.
            #expect(try await api.call(.get, "/v1/users/\(person)/devices/\(erased)/gates/nearby", key: read).json["enabled"] as? Bool == true)
            let promptsBefore = try await api.call(.get, "/v1/analytics/prompts", key: read).text
            let keptBefore = [
                try await api.call(.get, "/v1/users/\(person)/devices/\(kept)/state", key: read).text,
                try await api.call(.get, "/v1/users/\(person)/devices/\(kept)/gates", key: read).text,
                try await api.call(.get, "/v1/users/\(person)/devices/\(kept)/history", key: read).text,
            ]

            let accepted = try await api.call(.delete, "/v1/users/\(person)/devices/\(erased)", key: admin)
            #expect(accepted.status == .accepted, "\(accepted.text)")
            #expect(Set(accepted.json.keys) == ["id", "status"] && ["pending", "done"].contains(accepted.json["status"] as? String ?? ""))
            #expect(!accepted.text.contains(person) && !accepted.text.contains(erased))
            let id = try #require(accepted.json["id"] as? String)
            let record = try await ErasureTests.waitDone(api, service, admin, id)
            #expect(record["events"] as? Int == 4 && record["devices"] as? Int == 1, "\(record)")
            #expect(record["requestedAt"] is String && record["completedAt"] is String)
            #expect(record["attempts"] as? Int == 0 && record["lastError"] is NSNull, "\(record)")

            // Nothing of the device, in any table; its state, history and gate are a new device's.
            #expect(try await Self.count(
                pool, PostgresQuery(unsafeSQL: "SELECT count(*) FROM erasure_devices WHERE device_id = $1", binds: [erased.postgresBind])) == 0,
                "erasure_devices holds the erased device")
            for table in ["events", "streams", "device_states", "stream_snapshots", "archive_keys"] {
                let rows = try await Self.count(
                    pool, PostgresQuery(unsafeSQL: "SELECT count(*) FROM \(table) WHERE user_id = $1 AND device_id = $2",
                                        binds: [person.postgresBind, erased.postgresBind]))
                #expect(rows == 0, "\(table) holds the erased device")
            }
            #expect(try await Self.count(pool, "SELECT count(*) FROM erasure_work") == 0)
            #expect(try await api.call(.get, "/v1/users/\(person)/devices/\(erased)/state", key: read).json["version"] as? Int == 0)
            let history = try await api.call(.get, "/v1/users/\(person)/devices/\(erased)/history", key: read)
            #expect((history.json["entries"] as? [Any])?.isEmpty == true)
            let gate = try await api.call(.get, "/v1/users/\(person)/devices/\(erased)/gates/nearby", key: read)
            #expect(gate.json["enabled"] as? Bool == false && gate.json["version"] as? Int == 0, "\(gate.text)")

            // The person's other device is as it was; another person's device of the same id too.
            let keptAfter = [
                try await api.call(.get, "/v1/users/\(person)/devices/\(kept)/state", key: read).text,
                try await api.call(.get, "/v1/users/\(person)/devices/\(kept)/gates", key: read).text,
                try await api.call(.get, "/v1/users/\(person)/devices/\(kept)/history", key: read).text,
            ]
            #expect(keptAfter == keptBefore)
            let userGates = try await api.call(.get, "/v1/users/\(person)/gates", key: read)
            let verdicts = (userGates.json["decisions"] as? [[String: Any]])?.first?["devices"] as? [[String: Any]] ?? []
            #expect(verdicts.map { $0["deviceId"] as? String } == [kept], "\(userGates.text)")
            #expect(try await api.call(.get, "/v1/users/someone-else/devices/\(erased)/state", key: read).json["version"] as? Int == 3)

            // Aggregates that name no one are unchanged; replay and verify agree with what is left.
            #expect(try await api.call(.get, "/v1/analytics/prompts", key: read).text == promptsBefore)
            let differences = try await service.audit.replay(appID: UUID(uuidString: appID), logger: TestDatabase.logger).verify()
            #expect(differences.isEmpty, "\(differences.prefix(5))")

            // The device may report again afterwards, as a new device.
            let again = try await api.append(admin, Array(batch.prefix(3)))
            let results = again.json["results"] as? [[String: Any]] ?? []
            #expect(results.map { $0["duplicate"] as? Bool } == [false, false, false] && results.first?["version"] as? Int == 1, "\(again.text)")
        }
    }

    @Test("A pg_dump of the database holds no trace of an erased device's id (text, hex or base64), and still holds the person's other device")
    func dumpHoldsNoTrace() async throws {
        try await APIHarness.runWithService(privateDatabase: "device_erasure") { api, service in
            let (_, admin) = try await api.createApp()
            let person = ErasureTests.personID()
            let erased = Self.deviceID()
            let kept = Self.deviceID()
            #expect(try await api.append(admin, ErasureTests.events(person, erased) + ErasureTests.events(person, kept)).status == .ok)
            let accepted = try await api.call(.delete, "/v1/users/\(person)/devices/\(erased)", key: admin)
            _ = try await ErasureTests.waitDone(api, service, admin, accepted.json["id"] as? String ?? "")
            let dump = try await ErasureTests.pgDump(database: service.health.databaseName)
            #expect(dump.contains(kept), "the dump is not a dump of the kept device")
            let bytes = Data(erased.utf8)
            for form in [erased, bytes.map { String(format: "%02x", $0) }.joined(), bytes.base64EncodedString()] {
                #expect(!dump.contains(form), "the dump holds \(form.prefix(24))...")
            }
        }
    }

    @Test("Who may erase a device, and what they are told: an ingest or read key 403, ids outside the rules 422, an unknown device 202 with a record of 0; the record is 404 to any other key; beyond the app's pending bound, 429 with Retry-After")
    func rules() async throws {
        try await APIHarness.runWithService(privateDatabase: "device_erasure") { api, service in
            let (_, admin) = try await api.createApp()
            let read = try await api.createKey(admin, scope: "read")
            let ingest = try await api.createKey(admin, scope: "ingest")
            let person = ErasureTests.personID()
            #expect(try await api.append(admin, ErasureTests.events(person, "phone")).status == .ok)
            let path = "/v1/users/\(person)/devices/phone"
            for key in [read, ingest] {
                let refused = try await api.call(.delete, path, key: key)
                #expect(refused.status == .forbidden && refused.errorCode == "forbidden", "\(refused.text)")
            }
            #expect(try await api.call(.delete, path).status == .unauthorized)
            for bad in ["/v1/users/not%20valid/devices/phone", "/v1/users/\(person)/devices/not%20valid",
                        "/v1/users/\(person)/devices/\(String(repeating: "d", count: 129))"] {
                let refused = try await api.call(.delete, bad, key: admin)
                #expect(refused.status == .unprocessableContent && refused.errorCode == "validationFailed", "\(bad): \(refused.text)")
            }
            // Nothing was erased by the refusals.
            #expect(try await api.call(.get, "\(path)/state", key: read).json["version"] as? Int == 3)

            // An unknown device (of a known person, or of nobody): the same answer, a record of 0.
            for unknown in ["/v1/users/\(person)/devices/no-such-device", "/v1/users/\(ErasureTests.personID())/devices/phone"] {
                let accepted = try await api.call(.delete, unknown, key: admin)
                #expect(accepted.status == .accepted, "\(accepted.text)")
                let record = try await ErasureTests.waitDone(api, service, admin, accepted.json["id"] as? String ?? "")
                #expect(record["events"] as? Int == 0 && record["devices"] as? Int == 0, "\(record)")
            }
            #expect(try await api.call(.get, "\(path)/state", key: read).json["version"] as? Int == 3)

            // The record: the app's admin key only.
            let accepted = try await api.call(.delete, path, key: admin)
            let id = try #require(accepted.json["id"] as? String)
            #expect(try await api.call(.get, "/v1/erasures/\(id)", key: read).status == .notFound)
            let (_, stranger) = try await api.createApp("stranger")
            #expect(try await api.call(.get, "/v1/erasures/\(id)", key: stranger).status == .notFound)
            #expect(try await api.call(.get, "/v1/erasures/\(id)", key: admin).status == .ok)

            // The app's pending bound counts device erasures as it counts a person's.
            service.erasure.erasureSettings.maxPendingPerApp = 1
            let full = try await api.call(.delete, "/v1/users/\(person)/devices/other", key: admin)
            #expect(full.status == .tooManyRequests && full.errorCode == "rateLimited", "\(full.text)")
            #expect(full.headers[.retryAfter] == "5")
            let record = try await ErasureTests.waitDone(api, service, admin, id)
            #expect(record["events"] as? Int == 3 && record["devices"] as? Int == 1, "\(record)")
            #expect(try await api.call(.delete, "/v1/users/\(person)/devices/other", key: admin).status == .accepted)
        }
    }

    @Test("A device erasure and a person's erasure of the same person, both pending: each is done, the person is gone")
    func deviceThenPerson() async throws {
        try await APIHarness.runWithDatabase(privateDatabase: "device_erasure") { api, service, pool in
            let (_, admin) = try await api.createApp()
            let person = ErasureTests.personID()
            #expect(try await api.append(admin, ErasureTests.events(person, "phone") + ErasureTests.events(person, "tablet")).status == .ok)
            let device = try await api.call(.delete, "/v1/users/\(person)/devices/phone", key: admin)
            let whole = try await api.call(.delete, "/v1/users/\(person)", key: admin)
            let first = try await ErasureTests.waitDone(api, service, admin, device.json["id"] as? String ?? "")
            let second = try await ErasureTests.waitDone(api, service, admin, whole.json["id"] as? String ?? "")
            #expect(first["events"] as? Int == 3 && first["devices"] as? Int == 1, "\(first)")
            #expect(second["events"] as? Int == 3 && second["devices"] as? Int == 1, "\(second)")
            #expect(try await Self.count(pool, "SELECT count(*) FROM streams WHERE user_id = \(person)") == 0)
        }
    }
}

/// A device erasure across two real `locgate serve` processes: their workers perform it, their
/// followers acknowledge it, and once it is done the other process no longer serves the device
/// while it still serves the person's other device.
@Suite("Device erasure across two server processes", .timeLimit(.minutes(3)))
struct DeviceErasureTwoProcessTests {
    @Test("Done within 10 s by the servers themselves; the second process stops serving the erased device and keeps serving the other")
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
        #expect(firstReady && secondReady)
        let (_, app) = try await LocgateServer.request("POST", first.port, "/v1/apps", key: LocgateServer.adminToken, json: #"{"name": "erase-device"}"#)
        let key = app["apiKey"] as? String ?? ""
        _ = try await LocgateServer.request("PUT", first.port, "/v1/features/nearby", key: key, json: #"{"requires": "whenInUse"}"#)
        let person = ErasureTests.personID()
        let events = ErasureTests.events(person, "phone") + ErasureTests.events(person, "tablet")
        let (appended, _) = try await LocgateServer.request(
            "POST", first.port, "/v1/events", key: key, json: #"{"events": [\#(events.joined(separator: ","))]}"#)
        #expect(appended == 200)
        // The second process serves (and caches) both devices.
        for device in ["phone", "tablet"] {
            let (_, cached) = try await LocgateServer.request("GET", second.port, "/v1/users/\(person)/devices/\(device)/gates/nearby", key: key)
            #expect(cached["enabled"] as? Bool == true && cached["version"] as? Int == 3)
        }
        let (accepted, erasure) = try await LocgateServer.request("DELETE", first.port, "/v1/users/\(person)/devices/phone", key: key)
        #expect(accepted == 202)
        let id = erasure["id"] as? String ?? ""
        var record: [String: Any] = [:]
        let done = try await waitUntil(timeout: .seconds(10)) {
            record = try await LocgateServer.request("GET", second.port, "/v1/erasures/\(id)", key: key).1
            return record["status"] as? String == "done"
        }
        #expect(done && record["events"] as? Int == 3 && record["devices"] as? Int == 1, "\(record)")
        let (_, gone) = try await LocgateServer.request("GET", second.port, "/v1/users/\(person)/devices/phone/gates/nearby", key: key)
        #expect(gone["enabled"] as? Bool == false && gone["version"] as? Int == 0, "\(gone)")
        let (_, kept) = try await LocgateServer.request("GET", second.port, "/v1/users/\(person)/devices/tablet/gates/nearby", key: key)
        #expect(kept["enabled"] as? Bool == true && kept["version"] as? Int == 3, "\(kept)")
    }
}
