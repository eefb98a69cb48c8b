import Foundation
import LocationGateTestSupport
import PostgresClient
import Synchronization
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Two `locgate serve` processes on one database: what one appends, the other's in-memory gate
/// shows within SPEC's 1 s (LISTEN/NOTIFY, SPEC "kept coherent across several server processes";
/// typically within milliseconds).
///
/// What is checked is SPEC's property itself, which a loaded machine cannot break: every read
/// sent 1 s or more after the append was acknowledged reflects it (`Convergence.holds`). How
/// fast the change was seen is reported in the messages, not asserted: a slow answer is not a
/// stale one.
@Suite("Two server processes stay coherent", .timeLimit(.minutes(5)))
struct TwoProcessTests {
    /// SPEC §5 "Coherence": an acknowledged append is reflected everywhere within this.
    static let coherenceBound = Duration.seconds(1)
    typealias Server = LocgateServer
    static let admin = LocgateServer.adminToken

    static func request(_ method: String, _ port: Int, _ path: String, key: String? = nil, json: String? = nil) async throws -> (Int, [String: Any]) {
        try await LocgateServer.request(method, port, path, key: key, json: json)
    }

    static func waitReady(_ port: Int) async throws {
        if await !LocgateServer.waitReady(port) { Issue.record("server on port \(port) did not become ready") }
    }

    @Test("An append through one process is in the other's gate within 1 s")
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

        for round in 1...5 {
            let events = round == 1
                ? #"[{"id": "\#(UUID())", "userId": "u", "deviceId": "d", "occurredAt": "2026-11-22T10:00:00Z", "type": "authorizationRequested", "data": {"request": "whenInUse"}}]"#
                : #"[{"id": "\#(UUID())", "userId": "u", "deviceId": "d", "occurredAt": "2026-11-22T10:00:00Z", "type": "locationServicesChanged", "data": {"enabled": \#(round % 2 == 0 ? "false" : "true")}}]"#
            let (status, _) = try await Self.request("POST", first.port, "/v1/events", key: key, json: #"{"events": \#(events)}"#)
            #expect(status == 200)
            let converged = try await Self.converge(after: ContinuousClock.now) {
                let (_, gate) = try await Self.request("GET", second.port, "/v1/users/u/devices/d/gates/nearby", key: key)
                return gate["version"] as? Int == round
            }
            #expect(converged.holds(Self.coherenceBound), "round \(round): \(converged)")
        }

        // A feature added through the first process reaches the second's catalog too.
        _ = try await Self.request("PUT", first.port, "/v1/features/later", key: key, json: #"{"requires": "always"}"#)
        let added = try await Self.converge(after: ContinuousClock.now) {
            try await Self.request("GET", second.port, "/v1/users/u/devices/d/gates/later", key: key).0 == 200
        }
        #expect(added.holds(Self.coherenceBound), "feature: \(added)")
    }

    /// How a change was seen by a process that did not make it.
    struct Convergence: CustomStringConvertible {
        /// How long after the acknowledgement the first read that reflected the change answered.
        var seen: Duration?
        /// How long after the acknowledgement the last read that did not reflect it was sent.
        var lastStaleSent: Duration?

        /// The change was seen, and no read sent `bound` or more after the acknowledgement
        /// missed it: a read may be slow to answer, never stale past the bound.
        func holds(_ bound: Duration) -> Bool {
            seen != nil && (lastStaleSent.map { $0 < bound } ?? true)
        }

        var description: String {
            "seen after \(seen.map { "\($0)" } ?? "never"), last stale read sent after \(lastStaleSent.map { "\($0)" } ?? "none")"
        }
    }

    /// Polls `read` (true once the change shows) from `acknowledged` on, until it shows or
    /// `giveUp` has passed, recording when each read was sent and answered.
    static func converge(
        after acknowledged: ContinuousClock.Instant, giveUp: Duration = .seconds(10), _ read: () async throws -> Bool
    ) async throws -> Convergence {
        var result = Convergence()
        while true {
            let sent = ContinuousClock.now
            if try await read() {
                result.seen = ContinuousClock.now - acknowledged
                return result
            }
            result.lastStaleSent = sent - acknowledged
            if ContinuousClock.now - acknowledged >= giveUp { return result }
            try await Task.sleep(for: .milliseconds(2))
        }
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
        let cuts = Mutex(0)
        let cutter = Task {
            while !Task.isCancelled {
                let rows = try? await killer.query(
                    """
                    SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
                    WHERE application_name = 'locgate-listen' AND datname = \(name)
                    """)
                let cut = (try? rows?.first?.decode(0, as: Int.self)) ?? 0
                cuts.withLock { $0 += cut }
                try? await Task.sleep(for: .milliseconds(100))
            }
        }
        defer { cutter.cancel() }
        // At least 40 rounds, and more (up to 400) until 10 connections were cut during them:
        // how many cuts fall within 40 rounds depends on the machine's speed, and the rounds
        // must run across cuts to prove anything.
        var round = 0
        var seen = 0
        while round < 40 || (cuts.withLock({ $0 }) < 10 && round < 400) {
            round += 1
            // Pacing only, so that the rounds spread over the cutter's period; nothing is
            // timed around it.
            try await Task.sleep(for: .milliseconds(60))
            let device = "d\(round % 3)"
            // The second process reads (and may cache) the device first: that is what could go stale.
            let (_, before) = try await Self.request("GET", second.port, "/v1/users/u/devices/\(device)/gates", key: key)
            let version = (before["version"] as? Int ?? -1) + 1
            let event = #"{"id": "\#(UUID())", "userId": "u", "deviceId": "\#(device)", "occurredAt": "2026-11-22T10:00:00Z", "type": "locationServicesChanged", "data": {"enabled": \#(round % 2 == 0)}}"#
            let (status, _) = try await Self.request("POST", first.port, "/v1/events", key: key, json: #"{"events": [\#(event)]}"#)
            #expect(status == 200)
            let converged = try await Self.converge(after: ContinuousClock.now) {
                let (_, gate) = try await Self.request("GET", second.port, "/v1/users/u/devices/\(device)/gates", key: key)
                return gate["version"] as? Int == version
            }
            #expect(converged.holds(Self.coherenceBound), "round \(round): \(converged)")
            if converged.seen != nil { seen += 1 }
        }
        // A feature added and a key revoked through the first process, with the cuts going on.
        let (_, readKey) = try await Self.request("POST", first.port, "/v1/keys", key: key, json: #"{"scope": "read"}"#)
        let reader = readKey["key"] as? String ?? ""
        #expect(try await Self.request("GET", second.port, "/v1/features", key: reader).0 == 200)
        _ = try await Self.request("DELETE", first.port, "/v1/keys/\(readKey["id"] as? String ?? "")", key: key)
        let revoked = try await Self.converge(after: ContinuousClock.now) {
            try await Self.request("GET", second.port, "/v1/features", key: reader).0 == 401
        }
        #expect(revoked.holds(Self.coherenceBound), "revoked key: \(revoked)")
        _ = try await Self.request("PUT", first.port, "/v1/features/later", key: key, json: #"{"requires": "always"}"#)
        let added = try await Self.converge(after: ContinuousClock.now) {
            try await Self.request("GET", second.port, "/v1/users/u/devices/d0/gates/later", key: key).0 == 200
        }
        #expect(added.holds(Self.coherenceBound), "feature: \(added)")
        cutter.cancel()
        _ = await cutter.value
        await killer.close()
        let cut = cuts.withLock { $0 }
        #expect(cut >= 10, "only \(cut) LISTEN connections were cut in \(round) rounds")
        #expect(seen == round, "\(round - seen) of \(round) rounds never converged")
    }
}
