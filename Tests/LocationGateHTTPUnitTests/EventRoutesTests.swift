import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LocationAuthorization
import LocationGateService
import MetricsTestKit
import NIOCore
import Synchronization
import Testing

@testable import LocationGateHTTP

/// `EventRoutes` over an in-memory `EventIngest`: what the edge refuses before the service
/// (400, 413, 422), the service's refusals as their statuses, the ingest key's short answer,
/// and every refusal counted, the scope's included.
@Suite("HTTP: event routes with a fake service", .timeLimit(.minutes(1)))
struct EventRoutesTests {
    /// Stores nothing: answers each submission as a new event at version 1, or throws `refusal`.
    final class FakeIngest: EventIngest {
        let refusal: ServiceError?
        let batches = Mutex<[Int]>([])

        init(refusal: ServiceError? = nil) {
            self.refusal = refusal
        }

        func ingest(appID: UUID, submissions: [EventSubmission]) async throws(ServiceError) -> [EventResult] {
            batches.withLock { $0.append(submissions.count) }
            if let refusal { throw refusal }
            do {
                return try submissions.map { submission in
                    let json = #"{"id": "\#(submission.id.uuidString.lowercased())", "userId": "\#(submission.userId)", "deviceId": "\#(submission.deviceId)", "version": 1, "effects": [], "status": "authorizedWhenInUse", "duplicate": false}"#
                    return try JSONDecoder().decode(EventResult.self, from: Data(json.utf8))
                }
            } catch {
                throw ServiceError(.internalError, "the fake's result could not be made")
            }
        }
    }

    static func event(user: String = "u-1", id: UUID = UUID()) -> String {
        #"{"id": "\#(id.uuidString)", "userId": "\#(user)", "deviceId": "d-1", "occurredAt": "2026-11-22T10:00:00Z", "type": "locationServicesChanged", "data": {"enabled": true}}"#
    }

    static func post(
        _ client: some TestClientProtocol, _ body: String, scope: KeyScope? = .ingest
    ) async throws -> TestResponse {
        try await client.execute(uri: "/v1/events", method: .post, headers: RouteTestSupport.key(scope), body: ByteBuffer(string: body))
    }

    static func rejected(_ metrics: TestMetrics, _ code: String) throws -> Int64 {
        try metrics.expectCounter("locgate_rejections_total", [("code", code)]).totalValue
    }

    @Test("A batch is appended: 200, an ingest key told what was stored, a read key the state too")
    func appended() async throws {
        let ingest = FakeIngest()
        try await RouteTestSupport.application { $0.addRoutes(EventRoutes(ingest: ingest).collection) }.test(.router) { client in
            let stored = try await Self.post(client, #"{"events": [\#(Self.event()), \#(Self.event())]}"#)
            #expect(stored.status == .ok)
            let results = RouteTestSupport.json(stored)["results"] as? [[String: Any]] ?? []
            #expect(results.count == 2)
            #expect(results.allSatisfy { Set($0.keys) == ["deviceId", "duplicate", "id", "userId", "version"] })
            let admin = try await Self.post(client, #"{"events": [\#(Self.event())]}"#, scope: .admin)
            let full = RouteTestSupport.json(admin)["results"] as? [[String: Any]] ?? []
            #expect(full.first?["status"] as? String == "authorizedWhenInUse" && full.first?["effects"] is [Any])
        }
        #expect(ingest.batches.withLock { $0 } == [2, 1])
    }

    @Test("The edge refuses before the service: not JSON 400, too large 413, invalid 422 with the event's index")
    func refusedAtTheEdge() async throws {
        let ingest = FakeIngest()
        let metrics = TestMetrics()
        let routes = EventRoutes(ingest: ingest, rejections: EventRejections(factory: metrics))
        try await RouteTestSupport.application { $0.addRoutes(routes.collection) }.test(.router) { client in
            let malformed = try await Self.post(client, #"{"events": ["#)
            #expect(malformed.status == .badRequest && RouteTestSupport.error(malformed)["code"] as? String == "malformedJSON")
            let shape = try await Self.post(client, #"{"evnts": []}"#)
            #expect(shape.status == .badRequest && RouteTestSupport.error(shape)["code"] as? String == "invalidRequest")
            let huge = try await Self.post(client, #"{"events": [], "padding": "\#(String(repeating: "x", count: 1 << 20))"}"#)
            #expect(huge.status == .contentTooLarge && RouteTestSupport.error(huge)["code"] as? String == "tooLarge")
            let many = (0...IngestCapability.maxBatchEvents).map { _ in Self.event() }.joined(separator: ",")
            let tooMany = try await Self.post(client, #"{"events": [\#(many)]}"#)
            #expect(tooMany.status == .contentTooLarge && RouteTestSupport.error(tooMany)["code"] as? String == "tooLarge")
            let invalid = try await Self.post(client, #"{"events": [\#(Self.event()), \#(Self.event(user: "u 1"))]}"#)
            #expect(invalid.status == .unprocessableContent)
            #expect(RouteTestSupport.error(invalid)["code"] as? String == "validationFailed")
            #expect(RouteTestSupport.error(invalid)["index"] as? Int == 1)
            let id = UUID()
            let twice = try await Self.post(client, #"{"events": [\#(Self.event(id: id)), \#(Self.event(id: id))]}"#)
            #expect(twice.status == .unprocessableContent && RouteTestSupport.error(twice)["index"] as? Int == 1)
        }
        #expect(ingest.batches.withLock { $0 }.isEmpty)
        #expect(try Self.rejected(metrics, "malformedJSON") == 1)
        #expect(try Self.rejected(metrics, "invalidRequest") == 1)
        #expect(try Self.rejected(metrics, "tooLarge") == 2)
        #expect(try Self.rejected(metrics, "validationFailed") == 2)
    }

    @Test("The service's refusals keep their statuses: 409 with the index, 422, 503 with Retry-After")
    func refusedByTheService() async throws {
        let cases: [(ServiceError, HTTPResponse.Status)] = [
            (ServiceError(.versionConflict, "stream u-1/d-1 is at version 2, not the expected 1", index: 0), .conflict),
            (ServiceError(.ruleViolation, "no prompt is pending", index: 0), .unprocessableContent),
            (ServiceError(.overloaded, "the server is busy"), .serviceUnavailable),
        ]
        for (refusal, status) in cases {
            let ingest = FakeIngest(refusal: refusal)
            try await RouteTestSupport.application { $0.addRoutes(EventRoutes(ingest: ingest).collection) }.test(.router) { client in
                let reply = try await Self.post(client, #"{"events": [\#(Self.event())]}"#)
                #expect(reply.status == status, "\(refusal)")
                #expect(RouteTestSupport.error(reply)["code"] as? String == refusal.code.rawValue)
                #expect(RouteTestSupport.error(reply)["message"] as? String == refusal.message)
                #expect(RouteTestSupport.error(reply)["index"] as? Int == refusal.index)
                #expect(reply.headers[.retryAfter] == (refusal.isRetryable ? "1" : nil))
            }
        }
    }

    @Test("The ingest scope is the group's: a read key is 403 and no key 401, counted, and the service never asked")
    func scope() async throws {
        let ingest = FakeIngest()
        let metrics = TestMetrics()
        let routes = EventRoutes(ingest: ingest, rejections: EventRejections(factory: metrics))
        try await RouteTestSupport.application { $0.addRoutes(routes.collection) }.test(.router) { client in
            let read = try await Self.post(client, #"{"events": [\#(Self.event())]}"#, scope: .read)
            #expect(read.status == .forbidden)
            #expect(RouteTestSupport.error(read)["message"] as? String == "a key with scope read may not do this")
            let anonymous = try await Self.post(client, #"{"events": []}"#, scope: nil)
            #expect(anonymous.status == .unauthorized)
            let method = try await client.execute(uri: "/v1/events", method: .get, headers: RouteTestSupport.key(.read))
            #expect(method.status == .methodNotAllowed && method.headers[.allow] == "POST")
        }
        #expect(ingest.batches.withLock { $0 }.isEmpty)
        #expect(try Self.rejected(metrics, "forbidden") == 1)
        #expect(try Self.rejected(metrics, "unauthorized") == 1)
    }
}
