import Foundation
import LocationGateTestSupport
import PostgresClient
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// SPEC §16: every experiment change (a PUT, a stop, a DELETE) reaches every server and push
/// stream within 1 s, as catalog changes do. Two `locgate serve` processes on one database: a
/// change made through one is in the other's OFREP bulk evaluation, and its push stream sends
/// `refetchEvaluation`, within the bound (`TwoProcessTests.converge`: no read sent 1 s or more
/// after the acknowledgement may miss it).
@Suite("Experiments reach another process's OFREP and push streams within 1 s", .timeLimit(.minutes(5)))
struct ExperimentStreamTests {
    static let context = #"{"context": {"targetingKey": "u", "deviceId": "d"}}"#

    /// The experiments' flags of the bulk evaluation on `port`, by key: `(value, reason)`.
    static func flags(_ port: Int, _ key: String) async throws -> [String: (value: String, reason: String)] {
        let (_, bulk) = try await LocgateServer.request("POST", port, "/ofrep/v1/evaluate/flags", key: key, json: context)
        var flags: [String: (value: String, reason: String)] = [:]
        for flag in bulk["flags"] as? [[String: Any]] ?? [] {
            guard let name = flag["key"] as? String, let value = flag["value"] as? String else { continue }
            flags[name] = (value, flag["reason"] as? String ?? "")
        }
        return flags
    }

    @Test("A PUT, a stop and a DELETE through one process: the other's bulk evaluation shows it, and its push stream sends refetchEvaluation, within 1 s; a stop through the second reaches the first")
    func changesAcrossProcesses() async throws {
        #expect(FileManager.default.isExecutableFile(atPath: LocgateServer.binary.path), "build locgate first: \(LocgateServer.binary.path)")
        let configuration = try await TestDatabase.configuration()
        let url = try TestDatabase.serverConfiguration().connectionString
        let name = configuration.overrides["dbname"] ?? ""
        let base = 24_000 + Int.random(in: 0..<8_000)
        let first = try LocgateServer(port: base + 8, databaseURL: url, databaseName: name)
        let second = try LocgateServer(port: base + 9, databaseURL: url, databaseName: name)
        defer {
            first.stop()
            second.stop()
        }
        try await TwoProcessTests.waitReady(first.port)
        try await TwoProcessTests.waitReady(second.port)
        let (_, app) = try await LocgateServer.request("POST", first.port, "/v1/apps", key: LocgateServer.adminToken, json: #"{"name": "experiments"}"#)
        let key = app["apiKey"] as? String ?? ""
        // Every new device to `primer`, so that the variant does not depend on the bucket.
        let primer = #"{"prompt": "whenInUse", "control": "dialog", "variants": [{"key": "dialog", "weight": 0}, {"key": "primer", "weight": 100}]}"#
        #expect(try await LocgateServer.request("PUT", first.port, "/v1/experiments/primer", key: key, json: primer).0 == 201)
        let event = #"{"id": "\#(UUID())", "userId": "u", "deviceId": "d", "occurredAt": "2026-11-22T10:00:00Z", "type": "contextReported", "data": {"platform": "iOS", "osVersion": "17.4"}}"#
        #expect(try await LocgateServer.request("POST", first.port, "/v1/events", key: key, json: #"{"events": [\#(event)]}"#).0 == 200)

        // The second process exposes the device and caches the experiments.
        let exposed = try await TwoProcessTests.converge(after: ContinuousClock.now) {
            let flag = try await Self.flags(second.port, key)["primer"]
            return flag?.value == "primer" && flag?.reason == "SPLIT"
        }
        #expect(exposed.seen != nil, "\(exposed)")
        let stream = try #require(RawEventStream(port: second.port, path: "/ofrep/v1/event-streams?targetingKey=u&deviceId=d", key: key))
        #expect(stream.wait(for: "refetchEvaluation", count: 1, timeout: .seconds(5)), "a (re)connect gets refetchEvaluation at once")

        var messages = 1
        /// Makes a change through `port`, then waits for `shows` on the other process and for
        /// the stream's next message, each within the bound.
        func change(
            _ what: String, _ method: String, _ path: String, json: String? = nil, status: Int, through port: Int, seenOn other: Int,
            streamed: Bool = true, shows: ([String: (value: String, reason: String)]) -> Bool
        ) async throws {
            let (answered, body) = try await LocgateServer.request(method, port, path, key: key, json: json)
            #expect(answered == status, "\(what): \(answered) \(body)")
            let acknowledged = ContinuousClock.now
            let seen = try await TwoProcessTests.converge(after: acknowledged) {
                let flags = try await Self.flags(other, key)
                return shows(flags)
            }
            #expect(seen.holds(TwoProcessTests.coherenceBound), "\(what): \(seen)")
            guard streamed else { return }
            messages += 1
            let left = TwoProcessTests.coherenceBound - (ContinuousClock.now - acknowledged)
            #expect(stream.wait(for: "refetchEvaluation", count: messages, timeout: left), "\(what): no refetchEvaluation within 1 s")
        }

        try await change("stop", "POST", "/v1/experiments/primer/stop", json: #"{"winner": "dialog"}"#, status: 200,
                         through: first.port, seenOn: second.port) { flags in
            flags["primer"]?.value == "dialog" && flags["primer"]?.reason == "STATIC"
        }
        try await change("a new experiment", "PUT", "/v1/experiments/another", json: primer, status: 201,
                         through: first.port, seenOn: second.port) { flags in
            flags["another"]?.value == "primer" && flags["another"]?.reason == "SPLIT"
        }
        // A PUT that changes the weights of a running experiment: the exposed device keeps its
        // variant (its flag does not change, nor does the stream speak), and a device not
        // exposed yet gets the new weights on the other process within the bound.
        let reweighted = #"{"prompt": "whenInUse", "control": "dialog", "variants": [{"key": "dialog", "weight": 100}, {"key": "primer", "weight": 0}]}"#
        #expect(try await LocgateServer.request("PUT", first.port, "/v1/experiments/another", key: key, json: reweighted).0 == 200)
        let acknowledged = ContinuousClock.now
        let newcomer = try await TwoProcessTests.converge(after: acknowledged) {
            let (_, flag) = try await LocgateServer.request(
                "POST", second.port, "/ofrep/v1/evaluate/flags/another", key: key, json: #"{"context": {"targetingKey": "new-\#(UUID())", "deviceId": "d"}}"#)
            return flag["value"] as? String == "dialog" && flag["reason"] as? String == "SPLIT"
        }
        #expect(newcomer.holds(TwoProcessTests.coherenceBound), "weights: \(newcomer)")
        #expect(try await Self.flags(second.port, key)["another"]?.value == "primer", "sticky across a PUT of the weights")

        try await change("delete", "DELETE", "/v1/experiments/primer", status: 204, through: first.port, seenOn: second.port) { flags in
            flags["primer"] == nil && flags["another"] != nil
        }
        let (missing, body) = try await LocgateServer.request("POST", second.port, "/ofrep/v1/evaluate/flags/primer", key: key, json: Self.context)
        #expect(missing == 404 && body["errorCode"] as? String == "FLAG_NOT_FOUND", "\(body)")

        // The other way: a stop through the second process reaches the first's bulk evaluation
        // (and the stream on the second, whose own change it is).
        try await change("stop through the second", "POST", "/v1/experiments/another/stop", json: "{}", status: 200,
                         through: second.port, seenOn: first.port) { flags in
            flags["another"]?.value == "dialog" && flags["another"]?.reason == "STATIC"
        }
    }
}
