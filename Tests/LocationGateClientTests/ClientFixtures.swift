import Foundation
import LocationAuthorization
import LocationGateClient
import LocationGateTestSupport
import PostgresClient
import Testing

/// A fresh directory under the system's temporary folder, removed by `remove()`.
struct TemporaryDirectory {
    let url: URL

    init() {
        url = FileManager.default.temporaryDirectory
            .appendingPathComponent("locgate-client-tests-\(UUID().uuidString.lowercased())")
    }

    func remove() {
        try? FileManager.default.removeItem(at: url)
    }

    /// A file of the queue's directory (`events.journal`, `events.acks`).
    func file(_ name: String) -> URL {
        url.appendingPathComponent(name)
    }

    func size(of name: String) throws -> Int {
        try Data(contentsOf: file(name)).count
    }

    func bytes(of name: String) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: file(name)))
    }

    func write(_ bytes: [UInt8], to name: String) throws {
        try Data(bytes).write(to: file(name))
    }

    /// Appends raw bytes to a file, as a crash in the middle of a write would leave them.
    func appendBytes(_ bytes: [UInt8], to name: String) throws {
        let handle = try FileHandle(forUpdating: file(name))
        _ = try handle.seekToEnd()
        try handle.write(contentsOf: bytes)
        try handle.close()
    }
}

enum ClientFixtures {
    /// Whole seconds, so that a time compares equal after its RFC 3339 round trip.
    static let time = Date(timeIntervalSince1970: 1_795_000_000)

    /// A submission for `device` that the reducer always accepts.
    static func submission(_ number: Int, device: String = "d-1") -> EventSubmission {
        EventSubmission(
            id: UUID(), userId: "u-1", deviceId: device, occurredAt: time.addingTimeInterval(Double(number)),
            event: number % 2 == 0 ? .appStateChanged(.foreground, backgroundIndicator: false) : .appStateChanged(.background, backgroundIndicator: false))
    }

    /// Opens a queue and appends `count` submissions; returns them as stored.
    static func filledQueue(_ directory: TemporaryDirectory, count: Int, compactionThreshold: Int = EventQueue.defaultCompactionThreshold) throws -> (EventQueue, [EventSubmission]) {
        let queue = try EventQueue(directory: directory.url, compactionThreshold: compactionThreshold)
        var stored: [EventSubmission] = []
        for number in 0..<count {
            stored.append(try queue.append(submission(number)))
        }
        return (queue, stored)
    }
}

/// A real `locgate serve` on this process's test database, as the end-to-end tests start it:
/// the binary checked, a port drawn from the test's own range, and the server awaited until
/// `/readyz` answers. The test stops it (`defer { server.stop() }`); a server that never became
/// ready is stopped here, before the test fails, since the test has no handle on it yet.
struct ServerFixture {
    /// The test database's configuration, for reading what the server stored.
    let configuration: PostgresConfiguration
    let databaseURL: String
    let databaseName: String
    let port: Int
    let server: LocgateServer

    /// Starts `locgate serve` on a random port of `ports` and waits until it is ready.
    static func start(ports: Range<Int>, sourceLocation: SourceLocation = #_sourceLocation) async throws -> ServerFixture {
        try #require(
            FileManager.default.isExecutableFile(atPath: LocgateServer.binary.path),
            "build locgate first: \(LocgateServer.binary.path)", sourceLocation: sourceLocation)
        let configuration = try await TestDatabase.configuration()
        let databaseURL = try TestDatabase.serverConfiguration().connectionString
        let databaseName = configuration.overrides["dbname"] ?? ""
        let port = Int.random(in: ports)
        let server = try LocgateServer(port: port, databaseURL: databaseURL, databaseName: databaseName)
        try await waitReady(server, sourceLocation: sourceLocation)
        return ServerFixture(
            configuration: configuration, databaseURL: databaseURL, databaseName: databaseName, port: port, server: server)
    }

    /// Another `locgate serve` on the same port and database, ready: the restart after `server`
    /// has gone. The test stops it.
    func restart(sourceLocation: SourceLocation = #_sourceLocation) async throws -> LocgateServer {
        let restarted = try LocgateServer(port: port, databaseURL: databaseURL, databaseName: databaseName)
        try await Self.waitReady(restarted, sourceLocation: sourceLocation)
        return restarted
    }

    func stop() {
        server.stop()
    }

    /// Creates an app named `name` as the administrator: the app's own admin key and its id.
    func createApp(_ name: String, sourceLocation: SourceLocation = #_sourceLocation) async throws -> (adminKey: String, appID: UUID) {
        let (created, app) = try await LocgateServer.request(
            "POST", port, "/v1/apps", key: LocgateServer.adminToken, json: #"{"name": "\#(name)"}"#)
        #expect(created == 201, sourceLocation: sourceLocation)
        let adminKey = try #require(app["apiKey"] as? String, sourceLocation: sourceLocation)
        let appID = try #require((app["appId"] as? String).flatMap { UUID(uuidString: $0) }, sourceLocation: sourceLocation)
        return (adminKey, appID)
    }

    /// Creates a key of the app that `adminKey` administers, `json` the request's body (an
    /// ingest key unless told otherwise): the key, and the whole answer (a device-bound key's
    /// `tokenSecret`).
    func createKey(
        adminKey: String, json: String = #"{"scope": "ingest"}"#, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> (key: String, answer: [String: Any]) {
        let (created, answer) = try await LocgateServer.request("POST", port, "/v1/keys", key: adminKey, json: json)
        #expect(created == 201, sourceLocation: sourceLocation)
        let key = try #require(answer["key"] as? String, sourceLocation: sourceLocation)
        return (key, answer)
    }

    /// Waits for `/readyz`; a server that never answers is stopped before the test fails.
    private static func waitReady(_ server: LocgateServer, sourceLocation: SourceLocation) async throws {
        let ready = await LocgateServer.waitReady(server.port)
        if !ready { server.stop() }
        try #require(ready, "locgate serve did not become ready on port \(server.port)", sourceLocation: sourceLocation)
    }
}
