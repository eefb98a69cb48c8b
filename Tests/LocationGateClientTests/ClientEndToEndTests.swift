import Foundation
import LocationAuthorization
import LocationGateClient
import LocationGateService
import LocationGateTestSupport
import PostgresClient
import Testing

/// SPEC §10 end to end: events recorded through `EventRecorder`, queued on disk, sent by
/// `EventSender` to a real `locgate serve`, which is SIGKILLed in the middle and restarted.
@Suite("LocationGateClient against a real locgate serve", .timeLimit(.minutes(5)))
struct ClientEndToEndTests {
    @Test("300 events of 10 devices, the server killed after about 100: each stored exactly once, versions 1..n in recording order")
    func exactlyOnceAcrossAServerCrash() async throws {
        // Below Linux's ephemeral ports and apart from TwoProcessTests' 20,000-40,000.
        let fixture = try await ServerFixture.start(ports: 12_000..<20_000)
        let first = fixture.server, port = fixture.port
        var second: LocgateServer?
        defer {
            first.stop()
            second?.stop()
        }

        // An app, and an ingest key: what a device holds.
        let (adminKey, appID) = try await fixture.createApp("client-e2e")
        let ingestKey = try await fixture.createKey(adminKey: adminKey).key

        // 300 events, 30 for each of 10 devices, interleaved, all of kinds the reducer accepts.
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let queue = try EventQueue(directory: directory.url)
        defer { queue.close() }
        let recorders = (0..<10).map { EventRecorder(userId: "user-\($0)", deviceId: "device-\($0)", queue: queue) }
        var recorded: [String: [UUID]] = [:]
        for number in 0..<300 {
            let recorder = recorders[number % 10]
            let round = number / 10
            let submission: EventSubmission
            switch round % 3 {
            case 0: submission = try recorder.appState(.foreground)
            case 1: submission = try recorder.observed(status: .authorizedWhenInUse, accuracy: .full)
            default: submission = try recorder.appState(.background, backgroundIndicator: round % 2 == 0)
            }
            recorded[recorder.deviceId, default: []].append(submission.id)
        }
        #expect(queue.count == 300)

        // Batches of 25: the fourth brings the server to 100 events, and its answer is lost
        // with the server.
        let baseURL = try #require(URL(string: "http://127.0.0.1:\(port)"))
        let transport = CrashingTransport(
            inner: URLSessionEventTransport(baseURL: baseURL, ingestKey: ingestKey, timeout: 5), threshold: 100
        ) {
            first.crash()
        }
        let sender = EventSender(
            queue: queue, transport: transport,
            configuration: EventSender.Configuration(
                batchSize: 25, retry: RetryPolicy(base: .milliseconds(50), cap: .milliseconds(500))))
        let flushing = Task { try await sender.flush() }
        // A deadline, not a wait: a flush that never ends is cancelled after 90 s (cancelled
        // itself as soon as the test is done), so the test fails instead of hanging.
        let watchdog = Task {
            try await Task.sleep(for: .seconds(90))
            flushing.cancel()
        }
        defer {
            watchdog.cancel()
            flushing.cancel()
        }

        let crashed = try await waitUntil(timeout: .seconds(30), poll: .milliseconds(5)) { transport.crashed }
        try #require(crashed)
        #expect(!first.process.isRunning)
        // 75 acknowledged; the 25 the server stored before it died are still pending here.
        #expect(queue.count == 225)

        // The sender keeps retrying the same batch; a new server on the same port answers it.
        second = try await fixture.restart()
        let summary = try await flushing.value
        #expect(queue.isEmpty)
        #expect(summary.delivered == 300)
        #expect(summary.duplicates == 25, "the lost answer's batch comes back as duplicates")
        #expect(summary.rejected == 0)
        #expect(summary.retries >= 1)

        // The database holds each event once, and each device's versions are 1...30 in the
        // order the events were recorded.
        let pool = PostgresConnectionPool(configuration: fixture.configuration, size: 1, logger: TestDatabase.logger)
        let counts: PostgresRows
        let rows: PostgresRows
        do {
            counts = try await pool.query("SELECT count(*), count(DISTINCT event_id) FROM events WHERE app_id = \(appID)")
            rows = try await pool.query(
                "SELECT device_id, version, event_id FROM events WHERE app_id = \(appID) ORDER BY device_id, version")
        } catch {
            await pool.close()
            throw error
        }
        await pool.close()
        let total = try #require(counts.first)
        #expect(try total.decode(0, as: Int.self) == 300)
        #expect(try total.decode(1, as: Int.self) == 300)
        var versions: [String: [Int64]] = [:]
        var stored: [String: [UUID]] = [:]
        for row in rows {
            let device = try row.decode(0, as: String.self)
            versions[device, default: []].append(try row.decode(1, as: Int64.self))
            stored[device, default: []].append(try row.decode(2, as: UUID.self))
        }
        #expect(versions.count == 10)
        for (device, list) in versions {
            #expect(list == Array(Int64(1)...Int64(30)), "\(device): versions \(list)")
        }
        #expect(stored == recorded)
    }

    @Test("A device-bound ingest key: the transport sends the device token; the user's events are delivered, another user's are refused and reported")
    func deviceBoundKey() async throws {
        let server = try await ServerFixture.start(ports: 12_000..<20_000)
        defer { server.stop() }
        let port = server.port
        let (adminKey, _) = try await server.createApp("client-bound")
        let (ingestKey, key) = try await server.createKey(adminKey: adminKey, json: #"{"scope": "ingest", "deviceBound": true}"#)
        let secret = try #require(key["tokenSecret"] as? String)

        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let queue = try EventQueue(directory: directory.url)
        defer { queue.close() }
        let own = EventRecorder(userId: "user-1", deviceId: "device-1", queue: queue)
        let other = EventRecorder(userId: "user-2", deviceId: "device-2", queue: queue)
        _ = try own.appState(.foreground)
        _ = try other.appState(.foreground)
        _ = try own.observed(status: .authorizedWhenInUse, accuracy: .full)

        // What the app's backend hands the signed-in user-1.
        let token = DeviceToken.sign(userID: "user-1", expires: Date().addingTimeInterval(600), secret: secret)
        let baseURL = try #require(URL(string: "http://127.0.0.1:\(port)"))
        let transport = URLSessionEventTransport(baseURL: baseURL, ingestKey: ingestKey, timeout: 5, deviceToken: { token })
        let sender = EventSender(queue: queue, transport: transport)
        let summary = try await sender.flush()
        #expect(summary.delivered == 2 && summary.rejected == 1, "\(summary)")
        #expect(queue.isEmpty)
        let (status, history) = try await LocgateServer.request("GET", port, "/v1/users/user-2/devices/device-2/history", key: adminKey)
        #expect(status == 200 && (history["entries"] as? [Any])?.isEmpty == true)
    }
}
