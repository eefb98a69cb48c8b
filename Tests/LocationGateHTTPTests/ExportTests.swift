import Foundation
import HTTPTypes
import LocationAuthorization
import LocationGateService
import LocationGateTestSupport
import PostgresClient
import Testing

/// SPEC §13's access and portability (GDPR Art. 15 and 20) through the API and the command
/// line, against a real PostgreSQL: everything held of a person, device by device, as the other
/// endpoints show it; streamed a page at a time (a page of one gives the same JSON).
@Suite("Export: a person's devices, states, decisions and whole history", .timeLimit(.minutes(3)))
struct ExportTests {
    /// `count` events of one device, a minute apart from `start`: its context, a When In Use
    /// prompt answered, then Location Services switched off and on.
    static func events(_ user: String, _ device: String, count: Int, start: Int = 0) -> [String] {
        var events = [
            eventJSON("contextReported", #"{"platform": "iOS", "osVersion": "17.4", "appVersion": "3.0"}"#, user: user, device: device, at: time(start)),
            eventJSON("authorizationRequested", #"{"request": "whenInUse"}"#, user: user, device: device, at: time(start + 1)),
            eventJSON("promptResponded", #"{"choice": "allowWhileUsing"}"#, user: user, device: device, at: time(start + 2)),
        ]
        var enabled = false
        while events.count < count {
            events.append(eventJSON(
                "locationServicesChanged", #"{"enabled": \#(enabled)}"#, user: user, device: device, at: time(start + events.count)))
            enabled.toggle()
        }
        return Array(events.prefix(count))
    }

    static func time(_ minute: Int) -> String {
        String(format: "2026-11-22T%02d:%02d:00Z", 8 + minute / 60, minute % 60)
    }

    /// A JSON value written with sorted keys, to compare values parsed from two answers.
    static func canonical(_ value: Any?) throws -> String {
        guard let value else { return "absent" }
        return String(decoding: try JSONSerialization.data(withJSONObject: value, options: [.sortedKeys, .fragmentsAllowed]), as: UTF8.self)
    }

    /// The export's text without its `exportedAt`, the one thing two exports of the same data differ in.
    static func withoutTime(_ text: String) -> String {
        text.replacing(#/"exportedAt":"[^"]*"/#, with: #""exportedAt":"""#)
    }

    static func object(_ data: Data) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:]
    }

    @Test("A person with two devices: each device's state and decisions as the state and gates endpoints show them, and its whole history as the history endpoint writes it, in version order; nobody else's data; keys in byte order")
    func export() async throws {
        try await APIHarness.runWithService(privateDatabase: "export") { api, service in
            let (_, admin) = try await api.createApp()
            let read = try await api.createKey(admin, scope: "read")
            try await api.putFeature(admin, "nearby", #"{"requires": "whenInUse", "services": ["standard"]}"#)
            try await api.putFeature(admin, "geofence", #"{"requires": "always", "services": ["regionMonitoring"]}"#)
            let person = ErasureTests.personID()
            let batch = Self.events(person, "tablet", count: 25) + Self.events(person, "phone", count: 4, start: 30)
                + Self.events("someone-else", "phone", count: 5)
            #expect(try await api.append(admin, batch).status == .ok)

            let reply = try await api.call(.get, "/v1/users/\(person)/export", key: admin)
            #expect(reply.status == .ok, "\(reply.text)")
            #expect(reply.headers[.contentType] == "application/json")
            #expect(reply.text.hasPrefix(#"{"devices":[{"decisions":"#), "\(reply.text.prefix(80))")
            #expect(!reply.text.contains("someone-else"))
            let body = reply.json
            #expect(Set(body.keys) == ["devices", "exportedAt", "userId"])
            #expect(body["userId"] as? String == person)
            let exportedAt = try #require(body["exportedAt"] as? String)
            #expect(RFC3339.date(from: exportedAt) != nil, "\(exportedAt)")
            let devices = try #require(body["devices"] as? [[String: Any]])
            #expect(devices.map { $0["deviceId"] as? String } == ["phone", "tablet"])
            for (device, count) in zip(devices, [4, 25]) {
                let deviceID = device["deviceId"] as? String ?? ""
                #expect(Set(device.keys) == ["decisions", "deviceId", "experiments", "history", "state"])
                let history = try #require(device["history"] as? [[String: Any]])
                #expect(history.map { $0["version"] as? Int } == Array(1...count).map { Optional($0) }, "\(deviceID)")
                let entries = try await api.call(.get, "/v1/users/\(person)/devices/\(deviceID)/history?limit=1000", key: read).json["entries"]
                #expect(try Self.canonical(history) == Self.canonical(entries), "\(deviceID): history as the history endpoint's")
                let state = try await api.call(.get, "/v1/users/\(person)/devices/\(deviceID)/state", key: read).json
                #expect(try Self.canonical(device["state"]) == Self.canonical(state["state"]), "\(deviceID): state")
                let gates = try await api.call(.get, "/v1/users/\(person)/devices/\(deviceID)/gates", key: read).json
                #expect(try Self.canonical(device["decisions"]) == Self.canonical(gates["decisions"]), "\(deviceID): decisions")
                #expect((device["decisions"] as? [Any])?.count == 2)
            }
        }
    }

    @Test("Pages change nothing: read a device and an event at a time, or two at a time, the export is the same JSON")
    func pages() async throws {
        try await APIHarness.runWithService(privateDatabase: "export") { api, service in
            let (_, admin) = try await api.createApp()
            try await api.putFeature(admin, "nearby", #"{"requires": "whenInUse", "services": ["standard"]}"#)
            let person = ErasureTests.personID()
            var batch = Self.events(person, "a", count: 7) + Self.events(person, "b", count: 1, start: 10)
            batch += Self.events(person, "c", count: 4, start: 20) + Self.events(person, "d", count: 2, start: 30)
            #expect(try await api.append(admin, batch).status == .ok)
            let whole = try await api.call(.get, "/v1/users/\(person)/export", key: admin)
            #expect(whole.status == .ok)
            #expect((whole.json["devices"] as? [Any])?.count == 4)
            for size in [1, 2, 3, 4] {
                service.export.exportPageSize = size
                let paged = try await api.call(.get, "/v1/users/\(person)/export", key: admin)
                #expect(paged.status == .ok)
                #expect(Self.withoutTime(paged.text) == Self.withoutTime(whole.text), "pages of \(size)")
            }
        }
    }

    @Test("An unknown user gets devices []; an erased one too; an ingest or read key 403; a user id outside the rules 422")
    func rules() async throws {
        try await APIHarness.runWithService(privateDatabase: "export") { api, service in
            let (_, admin) = try await api.createApp()
            let read = try await api.createKey(admin, scope: "read")
            let ingest = try await api.createKey(admin, scope: "ingest")
            let unknown = try await api.call(.get, "/v1/users/nobody-at-all/export", key: admin)
            #expect(unknown.status == .ok)
            #expect(Self.withoutTime(unknown.text) == #"{"devices":[],"exportedAt":"","userId":"nobody-at-all"}"#, "\(unknown.text)")

            let person = ErasureTests.personID()
            #expect(try await api.append(admin, Self.events(person, "phone", count: 3)).status == .ok)
            for key in [read, ingest] {
                let refused = try await api.call(.get, "/v1/users/\(person)/export", key: key)
                #expect(refused.status == .forbidden && refused.errorCode == "forbidden", "\(refused.text)")
                #expect(!refused.text.contains("phone"))
            }
            #expect(try await api.call(.get, "/v1/users/\(person)/export").status == .unauthorized)
            let invalid = try await api.call(.get, "/v1/users/not%20valid/export", key: admin)
            #expect(invalid.status == .unprocessableContent && invalid.errorCode == "validationFailed", "\(invalid.text)")
            // Another app's admin key sees nothing of this app's person.
            let (_, stranger) = try await api.createApp("stranger")
            let elsewhere = try await api.call(.get, "/v1/users/\(person)/export", key: stranger)
            #expect((elsewhere.json["devices"] as? [Any])?.isEmpty == true, "\(elsewhere.text)")

            let accepted = try await api.call(.delete, "/v1/users/\(person)", key: admin)
            _ = try await ErasureTests.waitDone(api, service, admin, accepted.json["id"] as? String ?? "")
            let erased = try await api.call(.get, "/v1/users/\(person)/export", key: admin)
            #expect((erased.json["devices"] as? [Any])?.isEmpty == true, "\(erased.text)")
        }
    }

    @Test("The export written to a file: created with mode 0600, the same bytes as written to memory; an existing file is refused and left as it was")
    func file() async throws {
        try await APIHarness.runWithService(privateDatabase: "export") { api, service in
            let (appID, admin) = try await api.createApp()
            let app = try #require(UUID(uuidString: appID))
            let person = ErasureTests.personID()
            #expect(try await api.append(admin, Self.events(person, "phone", count: 6) + Self.events(person, "tablet", count: 3)).status == .ok)
            let directory = TemporaryDirectory()
            try FileManager.default.createDirectory(at: directory.url, withIntermediateDirectories: true)
            defer { directory.remove() }
            let path = directory.file("export.json").path

            service.export.exportPageSize = 2
            let export = try await service.export.beginExport(appID: app, userID: person)
            var memory: [UInt8] = []
            try await service.export.writeExport(export) { memory += $0 }
            try await service.export.writeExport(export, toFile: path)
            #expect(try Array(Data(contentsOf: URL(fileURLWithPath: path))) == memory)
            let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
            #expect(mode == 0o600)
            let http = try await api.call(.get, "/v1/users/\(person)/export", key: admin)
            #expect(Self.withoutTime(String(decoding: memory, as: UTF8.self)) == Self.withoutTime(http.text))

            var refused = false
            do {
                try await service.export.writeExport(export, toFile: path)
            } catch {
                refused = true
            }
            #expect(refused, "an existing file was replaced")
            #expect(try Array(Data(contentsOf: URL(fileURLWithPath: path))) == memory)
            let leftovers = try FileManager.default.contentsOfDirectory(atPath: directory.url.path)
            #expect(leftovers == ["export.json"], "\(leftovers)")
        }
    }

    @Test("locgate export writes the same JSON to a new 0600 file, or to standard output; it refuses an existing file")
    func command() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: LocgateServer.binary.path), "build locgate first: \(LocgateServer.binary.path)")
        try await APIHarness.runWithService(privateDatabase: "export") { api, service in
            let (appID, admin) = try await api.createApp()
            try await api.putFeature(admin, "nearby", #"{"requires": "whenInUse", "services": ["standard"]}"#)
            let person = ErasureTests.personID()
            #expect(try await api.append(admin, Self.events(person, "phone", count: 5) + Self.events(person, "tablet", count: 3)).status == .ok)
            let http = try await api.call(.get, "/v1/users/\(person)/export", key: admin)
            let directory = TemporaryDirectory()
            try FileManager.default.createDirectory(at: directory.url, withIntermediateDirectories: true)
            defer { directory.remove() }
            let path = directory.file("person.json").path
            let arguments = ["export", "--app", appID, "--user", person]

            let written = try LocgateCommandRun(arguments + ["--output", path], database: service.health.databaseName)
            #expect(written.status == 0)
            let text = try String(contentsOfFile: path, encoding: .utf8)
            #expect(Self.withoutTime(text) == Self.withoutTime(http.text))
            let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
            #expect(mode == 0o600)

            let printed = try LocgateCommandRun(arguments, database: service.health.databaseName)
            #expect(printed.status == 0)
            #expect(Self.withoutTime(printed.output.trimmingCharacters(in: .newlines)) == Self.withoutTime(http.text))

            let again = try LocgateCommandRun(arguments + ["--output", path], database: service.health.databaseName)
            #expect(again.status != 0, "an existing file was accepted")
            #expect(try String(contentsOfFile: path, encoding: .utf8) == text)
        }
    }
}

/// One run of the `locgate` binary on a test database: its exit status and standard output.
struct LocgateCommandRun {
    var status: Int32
    var output: String

    init(_ arguments: [String], database: String?) throws {
        let url = try TestDatabase.serverConfiguration().connectionString
        let run = try ChildProcess.run(
            LocgateServer.binary.path, arguments + ["--database-url", url] + (database.map { ["--database-name", $0] } ?? []))
        status = run.status
        output = String(decoding: run.output, as: UTF8.self)
    }
}
