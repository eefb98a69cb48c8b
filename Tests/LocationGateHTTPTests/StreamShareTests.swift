import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LocationAuthorization
import LocationGateHTTP
import LocationGateService
import LocationGateTestSupport
import PostgresClient
import Synchronization
import Testing

/// SPEC §5 "Resources": one app's push streams, opened and closed as fast as it likes within its
/// quota and each catching up page by page, read within a bounded share of the database
/// connections, so that another app's requests never see a 503 from them.
@Suite("Push streams read within a bounded share of the pool", .timeLimit(.minutes(3)))
struct StreamShareTests {
    /// A count shared by tasks.
    final class Tally: Sendable {
        private let value = Atomic<Int>(0)
        func add() { value.add(1, ordering: .relaxed) }
        var count: Int { value.load(ordering: .relaxed) }
    }

    @Test("While app A keeps opening, catching up and closing 48 change feeds and OFREP streams, app B's history reads, gates and appends all answer 200 (4 connections, 16 waiters, 2 s waits)")
    func churnLeavesOtherAppsAlone() async throws {
        // Production's wait and a short queue: a pool that streams could fill refuses at once.
        let pool = PostgresConnectionPool(
            configuration: try await TestDatabase.configuration(), size: 4, maxWaiters: 16, waitTimeout: .seconds(2),
            logger: TestDatabase.logger)
        let service = GateService(pool: pool, logger: TestDatabase.logger)
        var configuration = ServerConfiguration()
        configuration.adminToken = APIHarness.adminToken
        let app = Application(
            router: buildRouter(service: service, follower: nil, configuration: configuration, registry: nil),
            logger: TestDatabase.logger)
        do {
            try await app.test(.router) { client in
                let api = APIClient(client: client)
                let (appA, adminA) = try await api.createApp("streams")
                let readA = try await api.createKey(adminA, scope: "read")
                let (_, adminB) = try await api.createApp("steady")
                // 3,000 events for A's feeds to catch up on, 15 pages each; 500 devices of one
                // user for its OFREP streams' user-level evaluations.
                let appAID = try #require(UUID(uuidString: appA))
                for round in 0..<3 {
                    let events = (0..<1000).map { index in
                        EventSubmission(
                            id: UUID(), userId: "u", deviceId: "d\(index % 500)",
                            occurredAt: Date(timeIntervalSince1970: 1_795_341_600 + Double(round)),
                            event: .locationServicesChanged(enabled: (round + index / 500) % 2 == 1))
                    }
                    _ = try await service.events.ingest(appID: appAID, submissions: events)
                }
                #expect(try await api.append(adminB, [eventJSON("appStateChanged", #"{"state": "foreground"}"#)]).status == .ok)

                let stop = TestLatch()
                let opened = Tally()
                let churners = (0..<48).map { index in
                    Task {
                        let path = index % 4 == 0 ? "/ofrep/v1/event-streams?targetingKey=u" : "/v1/changes?from=start"
                        while !stop.isRaised {
                            let stream = Task { try await api.call(.get, path, key: readA) }
                            opened.add()
                            try? await Task.sleep(for: .milliseconds(20 + 10 * (index % 6)))
                            stream.cancel()
                            _ = try? await stream.value
                        }
                    }
                }
                defer {
                    stop.raise()
                    for churner in churners { churner.cancel() }
                }
                #expect(try await waitUntil(timeout: .seconds(30)) { opened.count >= 96 }, "the churn did not start")

                // B's requests meanwhile: every one must succeed.
                let failures = try await withThrowingTaskGroup(of: [String].self, returning: [String].self) { group in
                    for lane in 0..<2 {
                        group.addTask {
                            var failures: [String] = []
                            for round in 0..<25 {
                                let state = round % 2 == 0 ? "background" : "foreground"
                                let history = try await api.call(.get, "/v1/users/u-1/devices/d-1/history?limit=50", key: adminB)
                                let append = try await api.append(adminB, [eventJSON("appStateChanged", #"{"state": "\#(state)"}"#)])
                                let gates = try await api.call(.get, "/v1/users/u-1/devices/d-\(lane + 2)/gates", key: adminB)
                                for reply in [history, append, gates] where reply.status != .ok {
                                    failures.append("\(reply.status.code) \(reply.errorCode ?? "")")
                                }
                            }
                            return failures
                        }
                    }
                    var all: [String] = []
                    for try await part in group { all += part }
                    return all
                }
                let churned = opened.count
                stop.raise()
                for churner in churners { _ = await churner.value }
                #expect(failures.isEmpty, "app B was refused \(failures.count) of 150 times while A churned \(churned) streams: \(failures.prefix(5))")
                #expect(churned >= 96)
            }
        } catch {
            await pool.close()
            throw error
        }
        await pool.close()
    }
}
