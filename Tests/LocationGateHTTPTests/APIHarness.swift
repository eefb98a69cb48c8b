import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LocationGateHTTP
import LocationGateService
import LocationGateTestSupport
import NIOCore
import PostgresClient
import Testing

/// Runs a test against the real router and a real database, with a fresh app.
enum APIHarness {
    static let adminToken = "test-admin-token"

    static func run(
        rateLimit: Double? = nil, configure: (inout ServerConfiguration) -> Void = { _ in },
        _ body: @Sendable (APIClient) async throws -> Void
    ) async throws {
        try await runWithService(rateLimit: rateLimit, configure: configure) { api, _ in try await body(api) }
    }

    /// As `run`, with the service behind the router (for what a test drives itself, such as an
    /// erasure's phases, or checks beside the API, such as verify).
    ///
    /// `privateDatabase`: a migrated database of its own, for tests that no other test's server
    /// may touch (another server's worker would take up this one's erasures).
    static func runWithService(
        rateLimit: Double? = nil, privateDatabase: String? = nil, configure: (inout ServerConfiguration) -> Void = { _ in },
        _ body: @Sendable (APIClient, GateService) async throws -> Void
    ) async throws {
        try await runWithDatabase(rateLimit: rateLimit, privateDatabase: privateDatabase, configure: configure) { api, service, _ in
            try await body(api, service)
        }
    }

    /// As `runWithService`, with the database's pool too (for checks in SQL and replays).
    static func runWithDatabase(
        rateLimit: Double? = nil, privateDatabase: String? = nil, configure: (inout ServerConfiguration) -> Void = { _ in },
        _ body: @Sendable (APIClient, GateService, PostgresConnectionPool) async throws -> Void
    ) async throws {
        let pool: PostgresConnectionPool
        if let privateDatabase {
            pool = try await TestDatabase.privatePool(prefix: privateDatabase)
        } else {
            pool = try await TestDatabase.pool(size: 4)
        }
        let service = GateService(pool: pool, logger: TestDatabase.logger)
        var configuration = ServerConfiguration()
        configuration.adminToken = adminToken
        configuration.rateLimit = rateLimit
        configure(&configuration)
        let router = buildRouter(service: service, follower: nil, configuration: configuration, registry: nil)
        let app = Application(router: router, logger: TestDatabase.logger)
        do {
            try await app.test(.router) { client in
                let api = APIClient(client: client) {
                    let rollup = AnalyticsRollup(pool: pool, logger: TestDatabase.logger)
                    let passed = try await rollup.waitForInFlightCommits(patience: .seconds(60))
                    #expect(passed, "the cluster's oldest writing transaction did not end within 60 s")
                    try await rollup.catchUp(patience: .seconds(60))
                }
                try await body(api, service, pool)
            }
        } catch {
            await pool.close()
            throw error
        }
        await pool.close()
    }
}

/// A reply with its JSON body parsed.
struct Reply: @unchecked Sendable {
    var status: HTTPResponse.Status
    var headers: HTTPFields
    var body: Data

    var json: [String: Any] { (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] ?? [:] }
    var errorCode: String? { (json["error"] as? [String: Any])?["code"] as? String }
    var errorIndex: Int? { (json["error"] as? [String: Any])?["index"] as? Int }
    var text: String { String(decoding: body, as: UTF8.self) }
}

/// HTTP calls with JSON bodies and keys.
struct APIClient: Sendable {
    let client: any TestClientProtocol
    /// Run before each read of counted analytics (`GET /v1/analytics/...` and the dashboard's
    /// pages of figures): waits until every append acknowledged so far is readable in global
    /// order, then counts it. A request waits two seconds for each of those and then answers
    /// with what is counted (by design), and in a test run other tests hold writing
    /// transactions in their own databases of the cluster (holding the horizon back) and count
    /// large ingests in the shared one (holding the rollup's lock) for longer; a test comparing
    /// exact counts must not depend on that.
    var settle: (@Sendable () async throws -> Void)? = nil
    /// The dashboard's pages that show counted figures.
    static let analyticsPages: Set<String> = ["/dashboard", "/dashboard/prompts", "/dashboard/escalation", "/dashboard/location-button", "/dashboard/settings"]

    func call(
        _ method: HTTPRequest.Method, _ path: String, key: String? = nil, json: String? = nil, headers: HTTPFields = [:]
    ) async throws -> Reply {
        let route = path.split(separator: "?", maxSplits: 1).first.map(String.init) ?? path
        if method == .get, route.hasPrefix("/v1/analytics/") || Self.analyticsPages.contains(route), let settle {
            try await settle()
        }
        var fields = headers
        if let key { fields[.authorization] = "Bearer \(key)" }
        if json != nil, fields[.contentType] == nil { fields[.contentType] = "application/json" }
        return try await client.execute(
            uri: path, method: method, headers: fields, body: json.map { ByteBuffer(string: $0) }
        ) { response in
            Reply(status: response.status, headers: response.headers, body: Data((response.body ?? ByteBuffer()).readableBytesView))
        }
    }

    /// Creates an app and returns its id and admin key.
    func createApp(_ name: String = "test") async throws -> (appID: String, adminKey: String) {
        let reply = try await call(.post, "/v1/apps", key: APIHarness.adminToken, json: #"{"name": "\#(name)"}"#)
        #expect(reply.status == .created)
        return (reply.json["appId"] as? String ?? "", reply.json["apiKey"] as? String ?? "")
    }

    /// Creates a key of a scope with an admin key.
    func createKey(_ adminKey: String, scope: String) async throws -> String {
        let reply = try await call(.post, "/v1/keys", key: adminKey, json: #"{"scope": "\#(scope)"}"#)
        #expect(reply.status == .created)
        return reply.json["key"] as? String ?? ""
    }

    func putFeature(_ adminKey: String, _ key: String, _ definition: String) async throws {
        let reply = try await call(.put, "/v1/features/\(key)", key: adminKey, json: definition)
        #expect(reply.status == .created || reply.status == .ok, "\(reply.text)")
    }

    func append(_ key: String, _ events: [String]) async throws -> Reply {
        try await call(.post, "/v1/events", key: key, json: #"{"events": [\#(events.joined(separator: ","))]}"#)
    }
}

/// One event's JSON.
func eventJSON(
    _ type: String, _ data: String, user: String = "u-1", device: String = "d-1", id: UUID = UUID(),
    at time: String = "2026-11-22T10:00:00Z", expectedVersion: Int? = nil
) -> String {
    let version = expectedVersion.map { #", "expectedVersion": \#($0)"# } ?? ""
    return #"{"id": "\#(id.uuidString)", "userId": "\#(user)", "deviceId": "\#(device)", "occurredAt": "\#(time)", "type": "\#(type)", "data": \#(data)\#(version)}"#
}
