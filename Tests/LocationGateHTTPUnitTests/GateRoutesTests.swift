import EventLog
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LocationAuthorization
import LocationGateService
import NIOCore
import Synchronization
import Testing

@testable import LocationGateHTTP

/// `GateRoutes` over an in-memory `GateReading`: the statuses, the decision's JSON, the area's
/// 404s and 405s, and the read scope stated once for the collection.
@Suite("HTTP: gate routes with a fake service", .timeLimit(.minutes(1)))
struct GateRoutesTests {
    /// One device (`u-1`, `d-1`) and one feature (`nearby`), enabled; calls counted.
    final class FakeGates: GateReading {
        let calls = Mutex(0)

        static let decision = GateDecision(
            feature: "nearby", enabled: true, reason: .authorized, action: .none, status: .authorizedWhenInUse,
            provisional: false, temporary: false, accuracy: .full, requiredTier: .whenInUse, version: 3)

        func deviceGate(_ key: StreamKey, feature: String) async throws(ServiceError) -> GateDecision {
            calls.withLock { $0 += 1 }
            guard key == StreamKey(appID: RouteTestSupport.appID, userID: "u-1", deviceID: "d-1") else {
                throw ServiceError(.internalError, "an unexpected stream: \(key)")
            }
            guard feature == Self.decision.feature else { throw ServiceError(.notFound, "no feature \(feature.prefix(128))") }
            return Self.decision
        }

        func deviceGates(_ key: StreamKey) async throws(ServiceError) -> DeviceGates {
            throw ServiceError(.internalError, "not used here")
        }

        func userGates(appID: UUID, userID: String) async throws(ServiceError) -> UserGates {
            throw ServiceError(.internalError, "not used here")
        }

        func query(
            appID: UUID, devices: [(userID: String, deviceID: String)], featureKeys: [String]?
        ) async throws(ServiceError) -> [DeviceDecisions] {
            calls.withLock { $0 += 1 }
            throw ServiceError(.validationFailed, "features: no feature \(featureKeys?.first ?? "")")
        }
    }

    static let path = "/v1/users/u-1/devices/d-1/gates/nearby"

    @Test("A read or admin key gets the decision: 200, the gate's JSON as the decision writes it")
    func decision() async throws {
        let gates = FakeGates()
        try await RouteTestSupport.application { $0.addRoutes(GateRoutes(gates: gates).collection) }.test(.router) { client in
            for scope in [KeyScope.read, .admin] {
                let response = try await client.execute(uri: Self.path, method: .get, headers: RouteTestSupport.key(scope))
                #expect(response.status == .ok)
                #expect(response.headers[.contentType] == "application/json")
                let body = RouteTestSupport.json(response)
                #expect(Set(body.keys).isSuperset(of: [
                    "accuracy", "action", "enabled", "feature", "provisional", "reason", "requiredTier", "status", "temporary", "version",
                ]))
                #expect(body["feature"] as? String == "nearby" && body["enabled"] as? Bool == true)
                #expect(body["reason"] as? String == "authorized" && body["status"] as? String == "authorizedWhenInUse")
                #expect(body["version"] as? Int == 3)
                // The decision's own hand-written form, byte for byte.
                #expect(Data(response.body.readableBytesView) == Data(FakeGates.decision.json))
            }
        }
        #expect(gates.calls.withLock { $0 } == 2)
    }

    @Test("An unknown feature is the service's 404; a bad id 422 before the service is asked")
    func notFound() async throws {
        let gates = FakeGates()
        try await RouteTestSupport.application { $0.addRoutes(GateRoutes(gates: gates).collection) }.test(.router) { client in
            let unknown = try await client.execute(
                uri: "/v1/users/u-1/devices/d-1/gates/elsewhere", method: .get, headers: RouteTestSupport.key(.read))
            #expect(unknown.status == .notFound)
            #expect(RouteTestSupport.error(unknown)["code"] as? String == "notFound")
            #expect(RouteTestSupport.error(unknown)["message"] as? String == "no feature elsewhere")
            let badUser = try await client.execute(
                uri: "/v1/users/u%201/devices/d-1/gates/nearby", method: .get, headers: RouteTestSupport.key(.read))
            #expect(badUser.status == .unprocessableContent)
            #expect((RouteTestSupport.error(badUser)["message"] as? String)?.hasPrefix("userId: must be") == true)
        }
        #expect(gates.calls.withLock { $0 } == 1)
    }

    @Test("The read scope is the group's: an ingest key is 403 and no key 401, and the service is never asked")
    func scope() async throws {
        let gates = FakeGates()
        try await RouteTestSupport.application { $0.addRoutes(GateRoutes(gates: gates).collection) }.test(.router) { client in
            let ingest = try await client.execute(uri: Self.path, method: .get, headers: RouteTestSupport.key(.ingest))
            #expect(ingest.status == .forbidden)
            #expect(RouteTestSupport.error(ingest)["code"] as? String == "forbidden")
            #expect(RouteTestSupport.error(ingest)["message"] as? String == "a key with scope ingest may not do this")
            let anonymous = try await client.execute(uri: Self.path, method: .get, headers: RouteTestSupport.key(nil))
            #expect(anonymous.status == .unauthorized)
            #expect(RouteTestSupport.error(anonymous)["code"] as? String == "unauthorized")
            let query = try await client.execute(
                uri: "/v1/gates/query", method: .post, headers: RouteTestSupport.key(.ingest),
                body: ByteBuffer(string: #"{"devices": []}"#))
            #expect(query.status == .forbidden)
        }
        #expect(gates.calls.withLock { $0 } == 0)
    }

    @Test("Another method is 405 with Allow whatever the key's scope (the 405s are outside the scope group); another path 404")
    func routing() async throws {
        try await RouteTestSupport.application { $0.addRoutes(GateRoutes(gates: FakeGates()).collection) }.test(.router) { client in
            for scope in [KeyScope.ingest, .read, nil] {
                let method = try await client.execute(uri: Self.path, method: .delete, headers: RouteTestSupport.key(scope))
                #expect(method.status == .methodNotAllowed)
                #expect(method.headers[.allow] == "GET")
                #expect(RouteTestSupport.error(method)["code"] as? String == "methodNotAllowed")
            }
            let query = try await client.execute(uri: "/v1/gates/query", method: .get, headers: RouteTestSupport.key(.read))
            #expect(query.status == .methodNotAllowed && query.headers[.allow] == "POST")
            let unknown = try await client.execute(uri: "/v1/users/u-1/nothing", method: .get, headers: RouteTestSupport.key(.read))
            #expect(unknown.status == .notFound)
            #expect(RouteTestSupport.error(unknown)["code"] as? String == "notFound")
        }
    }

    @Test("A gate query's body is read before the service: not JSON is 400, a bad id 422 with its index, the service's 422 as it is")
    func query() async throws {
        let gates = FakeGates()
        try await RouteTestSupport.application { $0.addRoutes(GateRoutes(gates: gates).collection) }.test(.router) { client in
            func post(_ body: String) async throws -> TestResponse {
                try await client.execute(
                    uri: "/v1/gates/query", method: .post, headers: RouteTestSupport.key(.read), body: ByteBuffer(string: body))
            }
            let malformed = try await post(#"{"devices": "#)
            #expect(malformed.status == .badRequest && RouteTestSupport.error(malformed)["code"] as? String == "malformedJSON")
            let badID = try await post(#"{"devices": [{"userId": "u", "deviceId": "d"}, {"userId": "", "deviceId": "d"}]}"#)
            #expect(badID.status == .unprocessableContent && RouteTestSupport.error(badID)["index"] as? Int == 1)
            let refused = try await post(#"{"devices": [{"userId": "u", "deviceId": "d"}], "features": ["x"]}"#)
            #expect(refused.status == .unprocessableContent)
            #expect(RouteTestSupport.error(refused)["message"] as? String == "features: no feature x")
        }
        #expect(gates.calls.withLock { $0 } == 1)
    }
}
