import Foundation
import LocationGateTestSupport
import PostgresClient
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// What only a real `locgate serve` process shows (SPEC §14 "Observability" and "Strict
/// input"): its graceful shutdown on SIGTERM, its access log on standard error, the HELP text
/// of every metric it registers, and `LOCGATE_MAX_CLOCK_SKEW` read from its environment.
@Suite("A locgate serve process: shutdown, access log, metrics' HELP, clock skew", .timeLimit(.minutes(3)))
struct ServeProcessTests {
    static let user = "sd-user-4711"
    static let device = "sd-phone-4711"

    /// A batch of one event of `user`'s `device`, at `time`.
    static func batch(at time: Date) -> String {
        #"{"events": [{"id": "\#(UUID())", "userId": "\#(user)", "deviceId": "\#(device)", "occurredAt": "\#(time.formatted(.iso8601))", "type": "locationServicesChanged", "data": {"enabled": true}}]}"#
    }

    /// Sends all of `text` on a blocking socket.
    static func send(_ descriptor: Int32, _ text: String) -> Bool {
        let bytes = Array(text.utf8)
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { return false }
            sent += count
        }
        return true
    }

    /// Reads until `done` says the text so far is enough, the peer closes (`closed`), or nothing
    /// arrives for `seconds`.
    static func read(_ descriptor: Int32, seconds: Int, until done: (String) -> Bool = { _ in false }) -> (text: String, closed: Bool) {
        var timeout = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = recv(descriptor, &buffer, buffer.count, 0)
            guard count > 0 else { return (String(decoding: received, as: UTF8.self), count == 0) }
            received.append(contentsOf: buffer[0..<count])
            if done(String(decoding: received, as: UTF8.self)) { return (String(decoding: received, as: UTF8.self), false) }
        }
    }

    /// The metric names of the `# TYPE` lines, and the text of each `# HELP` line.
    static func metricHelp(_ text: String) -> (types: [String], help: [String: String]) {
        var types: [String] = []
        var help: [String: String] = [:]
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: " ", maxSplits: 3, omittingEmptySubsequences: false)
            guard parts.count >= 3, parts[0] == "#" else { continue }
            if parts[1] == "TYPE" { types.append(String(parts[2])) }
            if parts[1] == "HELP" { help[String(parts[2])] = parts.count > 3 ? String(parts[3]) : "" }
        }
        return (types, help)
    }

    @Test("SIGTERM: connections refused, the request in flight answered, the stream ended with retry:, one log line, exit within 10 s")
    func gracefulShutdown() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: LocgateServer.binary.path), "build locgate first")
        let configuration = try await TestDatabase.configuration()
        let url = try TestDatabase.serverConfiguration().connectionString
        let port = try #require(LocgateServer.freePort(), "no free port")
        let server = try LocgateServer(
            port: port, databaseURL: url, databaseName: configuration.overrides["dbname"] ?? "", arguments: ["--access-log"],
            captureErrors: true, logLevel: "info", environment: ["LOCGATE_MAX_CLOCK_SKEW": "60"])
        defer { server.stop() }
        let ready = await LocgateServer.waitReady(port)
        try #require(ready, "locgate serve did not become ready on port \(port)")
        let (created, app) = try await LocgateServer.request(
            "POST", port, "/v1/apps", key: LocgateServer.adminToken, json: #"{"name": "shutdown"}"#)
        #expect(created == 201)
        let key = try #require(app["apiKey"] as? String)
        let appID = try #require(app["appId"] as? String)

        // LOCGATE_MAX_CLOCK_SKEW=60: an hour ahead is refused, half a minute ahead is not.
        let (late, refusal) = try await LocgateServer.request("POST", port, "/v1/events", key: key, json: Self.batch(at: Date().addingTimeInterval(3600)))
        let error = refusal["error"] as? [String: Any]
        #expect(late == 422 && error?["code"] as? String == "validationFailed" && error?["index"] as? Int == 0)
        #expect((error?["message"] as? String)?.hasPrefix("occurredAt:") == true, "\(refusal)")
        let (soon, _) = try await LocgateServer.request("POST", port, "/v1/events", key: key, json: Self.batch(at: Date().addingTimeInterval(30)))
        #expect(soon == 200)

        // Every metric the process registered has its HELP text.
        let (types, help) = Self.metricHelp(try await LocgateServer.text(port, "/metrics"))
        #expect(types.count > 10 && types.contains("hb_requests") && types.contains("locgate_events_appended_total"), "\(types)")
        for name in types {
            #expect(!(help[name] ?? "").isEmpty, "\(name) has no HELP line")
        }

        // A change feed open, and a request whose body is half sent.
        let stream = try #require(ServerLimitsTests.connect(port))
        defer { close(stream) }
        #expect(Self.send(stream, "GET /v1/changes?from=start HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(key)\r\nAccept: text/event-stream\r\n\r\n"))
        let head = Self.read(stream, seconds: 15) { $0.contains("\r\n\r\n") }
        #expect(head.text.hasPrefix("HTTP/1.1 200"), "\(head.text)")
        let slow = try #require(ServerLimitsTests.connect(port))
        defer { close(slow) }
        let body = Array(Self.batch(at: Date()).utf8)
        let half = body.count / 2
        #expect(Self.send(slow, "POST /v1/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(key)\r\nContent-Type: application/json\r\nContent-Length: \(body.count)\r\n\r\n"))
        #expect(Self.send(slow, String(decoding: body[..<half], as: UTF8.self)))
        try await Task.sleep(for: .milliseconds(300))

        let signalled = ContinuousClock.now
        server.process.terminate()  // SIGTERM
        // No new connections, at once.
        let refused = try await waitUntil(timeout: .seconds(3), poll: .milliseconds(20)) {
            guard let probe = ServerLimitsTests.connect(port) else { return true }
            close(probe)
            return false
        }
        #expect(refused, "the server still took connections after SIGTERM")
        // The request in flight is finished a second later.
        try await Task.sleep(for: .seconds(1))
        #expect(Self.send(slow, String(decoding: body[half...], as: UTF8.self)))
        let answer = Self.read(slow, seconds: 15)
        #expect(answer.text.hasPrefix("HTTP/1.1 200"), "\(answer.text)")
        #expect(answer.text.contains(#""duplicate":false"#), "\(answer.text)")
        // The stream ended with a retry hint.
        let rest = Self.read(stream, seconds: 15)
        #expect(rest.closed, "the stream was not ended")
        #expect(rest.text.contains("retry: 1000\n\n"), "\(rest.text)")
        let exited = try await waitUntil(timeout: .seconds(12), poll: .milliseconds(20)) { !server.process.isRunning }
        let took = ContinuousClock.now - signalled
        #expect(exited && took < .seconds(10), "exited: \(exited) after \(took)")
        if exited { #expect(server.process.terminationStatus == 0) }

        let log = server.errorOutput
        let lines = log.split(separator: "\n").map(String.init)
        #expect(lines.filter { $0.contains("shutting down:") }.count == 1, "\(log)")
        // The access log: a JSON line per request, with its route template and the app in lower case.
        let entries = lines.filter { $0.hasPrefix("{") }.compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any]
        }
        #expect(entries.count >= 6, "\(log)")
        let appends = entries.filter { $0["route"] as? String == "/v1/events" && $0["method"] as? String == "POST" }
        #expect(appends.map { $0["status"] as? Int } == [422, 200, 200], "\(appends)")
        #expect(appends.allSatisfy { $0["appId"] as? String == appID.lowercased() })
        #expect(entries.contains { $0["route"] as? String == "/v1/changes" && $0["status"] as? Int == 200 })
        #expect(entries.contains { $0["route"] as? String == "/v1/apps" && $0["status"] as? Int == 201 && $0["appId"] is NSNull })
        #expect(entries.allSatisfy { ($0["durationMs"] as? Double).map { $0 >= 0 } == true && $0["time"] is String })
        // Never a user or device id, and ids only as the API writes them.
        #expect(!log.contains(Self.user) && !log.contains(Self.device), "\(log)")
        #expect(!log.contains(appID.uppercased()))
    }
}
