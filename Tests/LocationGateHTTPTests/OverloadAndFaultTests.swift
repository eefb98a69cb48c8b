import EventLog
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LocationAuthorization
import LocationGateHTTP
import LocationGateService
import LocationGateTestSupport
import PostgresClient
import Testing

/// SPEC §5 "Resources" and "Errors": load beyond the bounds is shed with 503 `overloaded`
/// and Retry-After, fast; a database fault is 503 `databaseUnavailable`, never 500, and the
/// pool heals by itself.
@Suite("Overload and database faults", .timeLimit(.minutes(3)))
struct OverloadAndFaultTests {
    /// Holds `pool`'s only connection until the returned latch is raised; returns once it is held.
    static func holdOnly(_ pool: PostgresConnectionPool) async throws -> (release: TestLatch, holder: Task<Void, any Error>) {
        let holding = TestLatch()
        let release = TestLatch()
        let holder = Task {
            try await pool.withConnection { connection in
                try connection.query("SELECT 1")
                holding.raise()
                release.block()
            }
        }
        #expect(try await waitUntil { holding.isRaised })
        return (release, holder)
    }

    /// A router over `service` with an app made directly in the database; returns its admin key.
    static func withRouter(
        _ service: GateService, _ body: @Sendable (APIClient, String) async throws -> Void
    ) async throws {
        var configuration = ServerConfiguration()
        configuration.adminToken = APIHarness.adminToken
        let app = Application(
            router: buildRouter(service: service, follower: nil, configuration: configuration, registry: nil),
            logger: TestDatabase.logger)
        try await app.test(.router) { client in
            let api = APIClient(client: client)
            let (_, key) = try await api.createApp()
            try await body(api, key)
        }
    }

    @Test("Far more concurrent gate reads than connections: 503 overloaded with Retry-After, each answered before the busy connection is free")
    func poolExhausted() async throws {
        let configuration = try await TestDatabase.configuration()
        let pool = PostgresConnectionPool(
            configuration: configuration, size: 1, maxWaiters: 4, waitTimeout: .milliseconds(200), logger: TestDatabase.logger)
        let service = GateService(pool: pool, logger: TestDatabase.logger)
        try await Self.withRouter(service) { api, key in
            // Keys are cached now; the one connection is then held until every reply is in.
            #expect(try await api.call(.get, "/v1/features", key: key).status == .ok)
            let blocker = try await Self.holdOnly(pool)
            defer { blocker.release.raise() }
            let replies = try await withThrowingTaskGroup(of: Reply.self) { group in
                for index in 0..<60 {
                    group.addTask { try await api.call(.get, "/v1/users/u/devices/miss-\(index)/gates", key: key) }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(replies.allSatisfy { $0.status == .serviceUnavailable && $0.errorCode == "overloaded" })
            #expect(replies.allSatisfy { $0.headers[.retryAfter] == "1" })
            // Shed, not queued: every answer came while the connection was still busy (it is
            // released only now), and nobody is left waiting for it.
            #expect(pool.waiting == 0)
            blocker.release.raise()
            _ = try await blocker.holder.value
            #expect(try await api.call(.get, "/v1/users/u/devices/miss-0/gates", key: key).status == .ok)
        }
        await pool.close()
    }

    @Test("The group-commit queue is bounded: appends beyond it are 503 overloaded at once, and nothing of them is stored")
    func queueBounded() async throws {
        let configuration = try await TestDatabase.configuration()
        let pool = PostgresConnectionPool(
            configuration: configuration, size: 1, maxWaiters: 2, waitTimeout: .milliseconds(300), logger: TestDatabase.logger)
        let service = GateService(pool: pool, logger: TestDatabase.logger, maxQueuedEvents: 3)
        let appID = try await TestDatabase.makeApp(pool)
        // The one connection is held until every append has its answer.
        let blocker = try await Self.holdOnly(pool)
        defer { blocker.release.raise() }
        let outcomes = await withTaskGroup(of: Result<Int64, ServiceError>.self) { group in
            for index in 0..<20 {
                group.addTask {
                    do {
                        return .success(try await service.events.ingest(appID: appID, submissions: [IsolationTests.submission(user: "q", device: "d\(index)")])[0].version)
                    } catch {
                        return .failure(ServiceError.from(error))
                    }
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        let failures = outcomes.compactMap { if case .failure(let error) = $0 { error } else { nil } }
        #expect(failures.count == 20 && failures.allSatisfy { $0.code == ServiceError.Code.overloaded }, "\(outcomes)")
        blocker.release.raise()
        _ = try await blocker.holder.value
        let stored = try await pool.query("SELECT count(*) FROM events WHERE app_id = \(appID)").first?.decode(0, as: Int.self)
        #expect(stored == 0)
        #expect(service.health.queuedEvents == 0)
        await pool.close()
    }

    @Test("Every pooled backend terminated under the server (57P01): no 500, and the next requests succeed")
    func terminatedBackends() async throws {
        let configuration = try await TestDatabase.create(prefix: "locgate_terminate")
        let name = configuration.overrides["dbname"] ?? ""
        let pool = PostgresConnectionPool(configuration: configuration, size: 4, logger: TestDatabase.logger)
        let killer = PostgresConnectionPool(configuration: try TestDatabase.serverConfiguration(), size: 1, logger: TestDatabase.logger)
        let service = GateService(pool: pool, logger: TestDatabase.logger)
        try await Self.withRouter(service) { api, key in
            var statuses: [HTTPResponse.Status] = []
            for round in 0..<5 {
                // Open every connection, then kill them all while they sit idle in the pool.
                _ = try await withThrowingTaskGroup(of: Reply.self) { group in
                    for index in 0..<8 {
                        group.addTask { try await api.append(key, [eventJSON("appStateChanged", #"{"state": "foreground"}"#, device: "t\(index)")]) }
                    }
                    return try await group.reduce(into: [Reply]()) { $0.append($1) }
                }
                try await killer.query(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = \(name) AND pid <> pg_backend_pid()")
                // Terminating only signals the backends: wait until they are gone, so that the
                // pool really holds dead connections when the next requests come.
                #expect(try await waitUntil {
                    try await killer.query("SELECT count(*) FROM pg_stat_activity WHERE datname = \(name)")
                        .first?.decode(0, as: Int.self) == 0
                })
                let replies = try await withThrowingTaskGroup(of: Reply.self) { group in
                    for index in 0..<8 {
                        group.addTask {
                            index % 2 == 0
                                ? try await api.append(key, [eventJSON("appStateChanged", #"{"state": "background"}"#, device: "t\(index)")])
                                : try await api.call(.get, "/v1/users/u-1/devices/fresh-\(round)-\(index)/gates", key: key)
                        }
                    }
                    return try await group.reduce(into: [Reply]()) { $0.append($1) }
                }
                statuses += replies.map(\.status)
            }
            #expect(!statuses.contains(.internalServerError))
            #expect(statuses.allSatisfy { $0 == .ok || $0 == .serviceUnavailable })
            // Dead idle connections are replaced when handed out: the pool healed at once.
            #expect(statuses.filter { $0 == .ok }.count >= statuses.count * 9 / 10, "\(statuses)")
        }
        await killer.close()
        await pool.close()
    }
}
