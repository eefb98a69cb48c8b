import Foundation
import LocationGateTestSupport
import PostgresClient
import Testing

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
