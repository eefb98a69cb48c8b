import Foundation
import LocationGateTestSupport
import PostgresClient
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Two `locgate serve` processes on one database: what one appends, the other's in-memory gate
/// shows within 100 ms (LISTEN/NOTIFY, SPEC "kept coherent across several server processes").
@Suite("Two server processes stay coherent")
struct TwoProcessTests {
    typealias Server = LocgateServer
    static let admin = LocgateServer.adminToken

    static func request(_ method: String, _ port: Int, _ path: String, key: String? = nil, json: String? = nil) async throws -> (Int, [String: Any]) {
        try await LocgateServer.request(method, port, path, key: key, json: json)
    }

    static func waitReady(_ port: Int) async throws {
        if await !LocgateServer.waitReady(port) { Issue.record("server on port \(port) did not become ready") }
    }

    @Test("An append through one process is in the other's gate within 100 ms")
    func coherence() async throws {
        #expect(FileManager.default.isExecutableFile(atPath: LocgateServer.binary.path), "build locgate first: \(LocgateServer.binary.path)")
        let configuration = try await TestDatabase.configuration()
        let url = try TestDatabase.serverConfiguration().connectionString
        let name = configuration.overrides["dbname"] ?? ""
        let base = 24_000 + Int.random(in: 0..<8_000)
        let first = try Server(port: base, databaseURL: url, databaseName: name)
        let second = try Server(port: base + 1, databaseURL: url, databaseName: name)
        defer {
            first.stop()
            second.stop()
        }
        try await Self.waitReady(first.port)
        try await Self.waitReady(second.port)

        let (_, app) = try await Self.request("POST", first.port, "/v1/apps", key: Self.admin, json: #"{"name": "two"}"#)
        let key = app["apiKey"] as? String ?? ""
        let (created, _) = try await Self.request("PUT", first.port, "/v1/features/nearby", key: key, json: #"{"requires": "whenInUse"}"#)
        #expect(created == 201)
        // The second process caches the device (notDetermined) and the catalog.
        let (_, before) = try await Self.request("GET", second.port, "/v1/users/u/devices/d/gates/nearby", key: key)
        #expect(before["reason"] as? String == "notDetermined")

        let clock = ContinuousClock()
        for round in 1...5 {
            let events = round == 1
                ? #"[{"id": "\#(UUID())", "userId": "u", "deviceId": "d", "occurredAt": "2026-11-22T10:00:00Z", "type": "authorizationRequested", "data": {"request": "whenInUse"}}]"#
                : #"[{"id": "\#(UUID())", "userId": "u", "deviceId": "d", "occurredAt": "2026-11-22T10:00:00Z", "type": "locationServicesChanged", "data": {"enabled": \#(round % 2 == 0 ? "false" : "true")}}]"#
            let (status, _) = try await Self.request("POST", first.port, "/v1/events", key: key, json: #"{"events": \#(events)}"#)
            #expect(status == 200)
            let acknowledged = clock.now
            var seen = false
            while clock.now - acknowledged < .seconds(2) {
                let (_, gate) = try await Self.request("GET", second.port, "/v1/users/u/devices/d/gates/nearby", key: key)
                if gate["version"] as? Int == round {
                    seen = true
                    break
                }
                try await Task.sleep(for: .milliseconds(2))
            }
            let elapsed = clock.now - acknowledged
            #expect(seen && elapsed < .milliseconds(100), "round \(round): seen \(seen) after \(elapsed)")
        }

        // A feature added through the first process reaches the second's catalog too.
        _ = try await Self.request("PUT", first.port, "/v1/features/later", key: key, json: #"{"requires": "always"}"#)
        let added = clock.now
        var found = false
        while clock.now - added < .seconds(2) && !found {
            let (status, _) = try await Self.request("GET", second.port, "/v1/users/u/devices/d/gates/later", key: key)
            found = status == 200
            if !found { try await Task.sleep(for: .milliseconds(2)) }
        }
        #expect(found && clock.now - added < .milliseconds(100))
    }

    /// Polls `read` until it returns true, for at most `limit`; the time it took, or nil.
    static func converge(within limit: Duration, _ read: () async throws -> Bool) async throws -> Duration? {
        let clock = ContinuousClock()
        let start = clock.now
        while clock.now - start < limit {
            if try await read() { return clock.now - start }
            try await Task.sleep(for: .milliseconds(5))
        }
        return nil
    }

    @Test("LISTEN connections terminated again and again: gates, features and revoked keys still converge within 1 s")
    func listenerCut() async throws {
        #expect(FileManager.default.isExecutableFile(atPath: LocgateServer.binary.path), "build locgate first: \(LocgateServer.binary.path)")
        let configuration = try await TestDatabase.configuration()
        let url = try TestDatabase.serverConfiguration().connectionString
        let name = configuration.overrides["dbname"] ?? ""
        let base = 24_000 + Int.random(in: 0..<8_000)
        let first = try Server(port: base + 2, databaseURL: url, databaseName: name)
        let second = try Server(port: base + 3, databaseURL: url, databaseName: name)
        defer {
            first.stop()
            second.stop()
        }
        try await Self.waitReady(first.port)
        try await Self.waitReady(second.port)
        let (_, app) = try await Self.request("POST", first.port, "/v1/apps", key: Self.admin, json: #"{"name": "cut"}"#)
        let key = app["apiKey"] as? String ?? ""
        _ = try await Self.request("PUT", first.port, "/v1/features/nearby", key: key, json: #"{"requires": "whenInUse"}"#)

        // Cut both servers' LISTEN connections every 100 ms while the rounds run.
        let killer = PostgresConnectionPool(configuration: configuration, size: 1, logger: TestDatabase.logger)
        let cutter = Task {
            var cuts = 0
            while !Task.isCancelled {
                let rows = try? await killer.query(
                    """
                    SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
                    WHERE application_name = 'locgate-listen' AND datname = \(name)
                    """)
                cuts += (try? rows?.first?.decode(0, as: Int.self)) ?? 0
                try? await Task.sleep(for: .milliseconds(100))
            }
            return cuts
        }
        var latencies: [Duration] = []
        for round in 1...40 {
            try await Task.sleep(for: .milliseconds(60))
            let device = "d\(round % 3)"
            // The second process reads (and may cache) the device first: that is what could go stale.
            let (_, before) = try await Self.request("GET", second.port, "/v1/users/u/devices/\(device)/gates", key: key)
            let version = (before["version"] as? Int ?? -1) + 1
            let event = #"{"id": "\#(UUID())", "userId": "u", "deviceId": "\#(device)", "occurredAt": "2026-11-22T10:00:00Z", "type": "locationServicesChanged", "data": {"enabled": \#(round % 2 == 0)}}"#
            let (status, _) = try await Self.request("POST", first.port, "/v1/events", key: key, json: #"{"events": [\#(event)]}"#)
            #expect(status == 200)
            let took = try await Self.converge(within: .seconds(3)) {
                let (_, gate) = try await Self.request("GET", second.port, "/v1/users/u/devices/\(device)/gates", key: key)
                return gate["version"] as? Int == version
            }
            #expect(took != nil && took! < .seconds(1), "round \(round): converged after \(String(describing: took))")
            if let took { latencies.append(took) }
        }
        // A feature added and a key revoked through the first process, with the cuts going on.
        let (_, readKey) = try await Self.request("POST", first.port, "/v1/keys", key: key, json: #"{"scope": "read"}"#)
        let reader = readKey["key"] as? String ?? ""
        #expect(try await Self.request("GET", second.port, "/v1/features", key: reader).0 == 200)
        _ = try await Self.request("DELETE", first.port, "/v1/keys/\(readKey["id"] as? String ?? "")", key: key)
        let revoked = try await Self.converge(within: .seconds(3)) {
            try await Self.request("GET", second.port, "/v1/features", key: reader).0 == 401
        }
        #expect(revoked != nil && revoked! < .seconds(1), "revoked key refused after \(String(describing: revoked))")
        _ = try await Self.request("PUT", first.port, "/v1/features/later", key: key, json: #"{"requires": "always"}"#)
        let added = try await Self.converge(within: .seconds(3)) {
            try await Self.request("GET", second.port, "/v1/users/u/devices/d0/gates/later", key: key).0 == 200
        }
        #expect(added != nil && added! < .seconds(1), "feature seen after \(String(describing: added))")
        cutter.cancel()
        let cuts = await cutter.value
        await killer.close()
        #expect(cuts >= 10, "only \(cuts) LISTEN connections were cut")
        let sorted = latencies.sorted()
        #expect(sorted.count == 40)
    }
}
