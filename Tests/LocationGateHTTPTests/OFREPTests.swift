import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
@testable import LocationGateHTTP
import LocationGateService
import LocationGateTestSupport
import PostgresClient
import Testing

@Suite("HTTP: OFREP, health, metrics and rate limits", .timeLimit(.minutes(2)))
struct OFREPTests {
    @Test("Single flag: device and user level, variant and reason always present")
    func single() async throws {
        try await APIHarness.run { api in
            let admin = try await GatesTests.setUp(api)
            let device = try await api.call(.post, "/ofrep/v1/evaluate/flags/arrival-lights", key: admin,
                                            json: #"{"context": {"targetingKey": "u-1", "deviceId": "d-1"}}"#)
            #expect(device.status == .ok)
            #expect(device.json["value"] as? Bool == true && device.json["variant"] as? String == "enabled")
            #expect(device.json["reason"] as? String == "TARGETING_MATCH" && device.json["key"] as? String == "arrival-lights")
            #expect((device.json["metadata"] as? [String: Any])?["status"] as? String == "authorizedAlways")
            let user = try await api.call(.post, "/ofrep/v1/evaluate/flags/nearby", key: admin, json: #"{"context": {"targetingKey": "nobody"}}"#)
            #expect(user.json["value"] as? Bool == false && user.json["variant"] as? String == "disabled")
            #expect((user.json["metadata"] as? [String: Any])?["action"] as? String == "requestWhenInUse")
            // X-API-Key works too.
            var headers = HTTPFields()
            if let name = HTTPField.Name("X-API-Key") { headers[name] = admin }
            let viaHeader = try await api.call(.post, "/ofrep/v1/evaluate/flags/nearby", json: #"{"context": {"targetingKey": "u-1"}}"#, headers: headers)
            #expect(viaHeader.json["value"] as? Bool == true)
        }
    }

    @Test("OFREP errors use OFREP's bodies: FLAG_NOT_FOUND, TARGETING_KEY_MISSING, INVALID_CONTEXT, PARSE_ERROR, 401")
    func errors() async throws {
        try await APIHarness.run { api in
            let admin = try await GatesTests.setUp(api)
            func check(_ path: String, _ body: String, _ status: HTTPResponse.Status, _ code: String, key: String? = nil) async throws {
                let reply = try await api.call(.post, path, key: key ?? admin, json: body)
                #expect(reply.status == status, "\(body)")
                #expect(reply.json["errorCode"] as? String == code, "\(reply.text)")
                #expect(reply.json["errorDetails"] is String)
            }
            try await check("/ofrep/v1/evaluate/flags/nope", #"{"context": {"targetingKey": "u-1"}}"#, .notFound, "FLAG_NOT_FOUND")
            try await check("/ofrep/v1/evaluate/flags/nearby", #"{"context": {}}"#, .badRequest, "TARGETING_KEY_MISSING")
            try await check("/ofrep/v1/evaluate/flags/nearby", #"{}"#, .badRequest, "TARGETING_KEY_MISSING")
            try await check("/ofrep/v1/evaluate/flags/nearby", #"{"context": {"targetingKey": 7}}"#, .badRequest, "INVALID_CONTEXT")
            try await check("/ofrep/v1/evaluate/flags/nearby", #"{"context": {"targetingKey": "u", "deviceId": ["x"]}}"#, .badRequest, "INVALID_CONTEXT")
            try await check("/ofrep/v1/evaluate/flags/nearby", #"{"context""#, .badRequest, "PARSE_ERROR")
            try await check("/ofrep/v1/evaluate/flags", #"{"context": {}}"#, .badRequest, "TARGETING_KEY_MISSING")
            let unauthorized = try await api.call(.post, "/ofrep/v1/evaluate/flags/nearby", json: #"{"context": {"targetingKey": "u"}}"#)
            #expect(unauthorized.status == .unauthorized)
        }
    }

    @Test("Bulk: every flag, with an ETag; If-None-Match gives 304 until something changes")
    func bulk() async throws {
        try await APIHarness.run { api in
            let admin = try await GatesTests.setUp(api)
            let context = #"{"context": {"targetingKey": "u-1", "deviceId": "d-1"}}"#
            let first = try await api.call(.post, "/ofrep/v1/evaluate/flags", key: admin, json: context)
            let flags = first.json["flags"] as? [[String: Any]] ?? []
            #expect(flags.compactMap { $0["key"] as? String } == ["arrival-lights", "nearby"])
            #expect(flags.allSatisfy { $0["variant"] is String && $0["reason"] as? String == "TARGETING_MATCH" })
            let etag = try #require(first.headers[.eTag])
            let same = try await api.call(.post, "/ofrep/v1/evaluate/flags", key: admin, json: context, headers: [.ifNoneMatch: etag])
            #expect(same.status == .notModified && same.body.isEmpty)
            _ = try await api.append(admin, [eventJSON("settingsChanged", #"{"authorization": "never"}"#)])
            let changed = try await api.call(.post, "/ofrep/v1/evaluate/flags", key: admin, json: context, headers: [.ifNoneMatch: etag])
            #expect(changed.status == .ok && changed.headers[.eTag] != etag)
        }
    }

    @Test("Health and metrics need no key; per-app limits (all of an app's keys together) answer 429 with Retry-After")
    func healthAndLimits() async throws {
        // One request per 100 s (burst 1): the test's requests finish well within one refill
        // even on a loaded machine (at one per 10 s, a fresh-clone CI run's suites took longer
        // than that between the key's creation and the last request, and the bucket refilled).
        try await APIHarness.run(rateLimit: 0.01) { api in
            #expect(try await api.call(.get, "/healthz").status == .ok)
            #expect(try await api.call(.get, "/metrics").status == .ok)
            let (_, admin) = try await api.createApp()
            let (_, other) = try await api.createApp("other")
            // The key creation spends the app's one token; its new key shares the bucket.
            let spent = ContinuousClock.now
            let reader = try await api.createKey(admin, scope: "read")
            let limited = try await api.call(.get, "/v1/features", key: reader)
            #expect(limited.status == .tooManyRequests && limited.errorCode == "rateLimited")
            // The next token 100 s after it was spent, less what has passed since (a loaded
            // machine may take a while between the two requests).
            let passed = Int((ContinuousClock.now - spent).components.seconds)
            let retryAfter = limited.headers[.retryAfter].flatMap(Int.init)
            #expect(retryAfter.map { (max(1, 99 - passed)...100).contains($0) } == true, "the next token in 100 s, \(passed) s after: \(String(describing: retryAfter))")
            // Another app has a bucket of its own.
            #expect(try await api.call(.get, "/v1/features", key: other).status == .ok)
            let ofrep = try await api.call(.post, "/ofrep/v1/evaluate/flags", key: admin, json: #"{"context": {"targetingKey": "u"}}"#)
            #expect(ofrep.status == .tooManyRequests && ofrep.headers[.retryAfter] != nil && ofrep.json["errorCode"] as? String == "GENERAL")
        }
    }

    @Test("Rate-limit buckets that refilled are dropped: the map holds only recently active apps")
    func bucketsExpire() {
        let limiter = RateLimiter(requestsPerSecond: 1000, burst: 10)
        let start = ContinuousClock.now
        for index in 0..<RateLimiter.sweepInterval - 1 {
            _ = limiter.acquire(UUID(), now: start + .microseconds(index))
        }
        #expect(limiter.count == RateLimiter.sweepInterval - 1)
        // A second later every bucket is full again; the next sweep drops them all.
        let busy = UUID()
        #expect(limiter.acquire(busy, now: start + .seconds(1)) == nil)
        #expect(limiter.count <= 1)
    }
}

@Suite("HTTP: an unreachable database", .timeLimit(.minutes(2)))
struct DatabaseDownTests {
    @Test("Every data endpoint answers 503 databaseUnavailable when PostgreSQL cannot be reached")
    func unavailable() async throws {
        let configuration = PostgresConfiguration(connectionString: "postgresql://nobody@127.0.0.1:1/none?connect_timeout=2")
        let pool = PostgresConnectionPool(configuration: configuration, size: 1, logger: TestDatabase.logger)
        let service = GateService(pool: pool, logger: TestDatabase.logger)
        var server = ServerConfiguration()
        server.adminToken = APIHarness.adminToken
        let app = Application(router: buildRouter(service: service, follower: nil, configuration: server, registry: nil), logger: TestDatabase.logger)
        try await app.test(.router) { client in
            let api = APIClient(client: client)
            let created = try await api.call(.post, "/v1/apps", key: APIHarness.adminToken, json: #"{"name": "x"}"#)
            #expect(created.status == .serviceUnavailable && created.errorCode == "databaseUnavailable")
            let withKey = try await api.call(.get, "/v1/features", key: "lg_" + String(repeating: "k", count: 43))
            #expect(withKey.status == .serviceUnavailable && withKey.errorCode == "databaseUnavailable")
            let ready = try await api.call(.get, "/readyz")
            #expect(ready.status == .serviceUnavailable && ready.json["database"] as? Bool == false)
            #expect(try await api.call(.get, "/healthz").status == .ok)
            // A key on a health request is not looked up: /healthz never touches the database.
            #expect(try await api.call(.get, "/healthz", key: "lg_" + String(repeating: "h", count: 43)).status == .ok)
            #expect(ready.headers[.retryAfter] == nil)
            #expect(withKey.headers[.retryAfter] == "1")
        }
        await pool.close()
    }

    @Test("OFREP answers an unreachable database with 503 and OFREP's body")
    func ofrepUnavailable() async throws {
        let configuration = PostgresConfiguration(connectionString: "postgresql://nobody@127.0.0.1:1/none?connect_timeout=2")
        let pool = PostgresConnectionPool(configuration: configuration, size: 1, logger: TestDatabase.logger)
        let service = GateService(pool: pool, logger: TestDatabase.logger)
        let app = Application(router: buildRouter(service: service, follower: nil, configuration: ServerConfiguration(), registry: nil), logger: TestDatabase.logger)
        try await app.test(.router) { client in
            let api = APIClient(client: client)
            let reply = try await api.call(
                .post, "/ofrep/v1/evaluate/flags", key: "lg_" + String(repeating: "k", count: 43), json: #"{"context": {"targetingKey": "u"}}"#)
            #expect(reply.status == .serviceUnavailable && reply.json["errorCode"] as? String == "GENERAL", "\(reply.text)")
            #expect(reply.headers[.retryAfter] == "1")
        }
        await pool.close()
    }
}
