import Foundation
import HTTPTypes
import LocationGateTestSupport
import Testing

/// Reads an outside request can size are bounded (SPEC §5): gate queries by features and
/// decisions, the catalog by its size, user-level gates by the devices they read, and state as
/// of by folding the stream page by page.
@Suite("Bounds on what a request can make the server read", .timeLimit(.minutes(3)))
struct ReadBoundsTests {
    @Test("Gate queries: more than 100 features or a repeated one is 422; more than 100,000 decisions is 413")
    func gateQueryBounds() async throws {
        try await APIHarness.run { api in
            let (_, admin) = try await api.createApp()
            try await api.putFeature(admin, "nearby", #"{"requires": "whenInUse"}"#)
            let device = #"{"devices": [{"userId": "u", "deviceId": "d"}], "features": "#
            let repeated = try await api.call(.post, "/v1/gates/query", key: admin, json: device + #"["nearby", "nearby"]}"#)
            #expect(repeated.status == .unprocessableContent && repeated.errorCode == "validationFailed", "\(repeated.text)")
            let names = (0...100).map { #""f\#($0)""# }.joined(separator: ",")
            let tooMany = try await api.call(.post, "/v1/gates/query", key: admin, json: device + "[\(names)]}")
            #expect(tooMany.status == .unprocessableContent && tooMany.errorCode == "validationFailed", "\(tooMany.text)")
            // 10,000 devices × 11 features: 110,000 decisions.
            for index in 0..<10 { try await api.putFeature(admin, "f\(index)", #"{"requires": "whenInUse"}"#) }
            let devices = (0..<10_000).map { #"{"userId": "u", "deviceId": "d\#($0)"}"# }.joined(separator: ",")
            let large = try await api.call(.post, "/v1/gates/query", key: admin, json: #"{"devices": [\#(devices)]}"#)
            #expect(large.status == .contentTooLarge && large.errorCode == "tooLarge", "\(large.text.prefix(300))")
            let fits = try await api.call(
                .post, "/v1/gates/query", key: admin, json: #"{"devices": [\#(devices)], "features": ["nearby"]}"#)
            #expect(fits.status == .ok)
        }
    }

    @Test("The catalog holds 1,000 features: the 1,001st is 422 and stores nothing; replacing one still works")
    func catalogCap() async throws {
        try await APIHarness.run { api in
            let (_, admin) = try await api.createApp()
            for index in 0..<1_000 {
                let reply = try await api.call(.put, "/v1/features/f\(index)", key: admin, json: #"{"requires": "whenInUse"}"#)
                #expect(reply.status == .created)
            }
            let refused = try await api.call(.put, "/v1/features/one-more", key: admin, json: #"{"requires": "whenInUse"}"#)
            #expect(refused.status == .unprocessableContent && refused.errorCode == "validationFailed", "\(refused.text)")
            #expect(try await api.call(.get, "/v1/features/one-more", key: admin).status == .notFound)
            let replaced = try await api.call(.put, "/v1/features/f7", key: admin, json: #"{"requires": "always"}"#)
            #expect(replaced.status == .ok)
            let listed = try await api.call(.get, "/v1/features", key: admin)
            #expect((listed.json["features"] as? [Any])?.count == 1_000)
        }
    }

    @Test("User-level gates read at most 100 devices of a user: the first 100 by device id")
    func userDevicesCap() async throws {
        try await APIHarness.run { api in
            let (_, admin) = try await api.createApp()
            try await api.putFeature(admin, "nearby", #"{"requires": "whenInUse"}"#)
            let ingest = try await api.createKey(admin, scope: "ingest")
            let events = (0..<105).map { eventJSON("appStateChanged", #"{"state": "foreground"}"#, user: "many", device: String(format: "d%03d", $0)) }
            #expect(try await api.append(ingest, events).status == .ok)
            let gates = try await api.call(.get, "/v1/users/many/gates", key: admin)
            let devices = ((gates.json["decisions"] as? [[String: Any]])?.first?["devices"] as? [[String: Any]]) ?? []
            #expect(devices.count == 100)
            #expect(devices.first?["deviceId"] as? String == "d000" && devices.last?["deviceId"] as? String == "d099")
        }
    }

    @Test("State as of a version deep in a long stream: folded page by page, the same state as the history says")
    func stateFoldsPages() async throws {
        try await APIHarness.run { api in
            let (_, admin) = try await api.createApp()
            let ingest = try await api.createKey(admin, scope: "ingest")
            // 2,600 events alternating foreground and background: three pages and a part.
            for batch in 0..<3 {
                let events = (0..<1000).compactMap { index -> String? in
                    let number = batch * 1000 + index
                    guard number < 2_600 else { return nil }
                    return eventJSON("appStateChanged", number % 2 == 0 ? #"{"state": "foreground"}"# : #"{"state": "background"}"#, device: "long")
                }
                #expect(try await api.append(ingest, events).status == .ok)
            }
            let odd = try await api.call(.get, "/v1/users/u-1/devices/long/state?version=2501", key: admin)
            #expect(odd.status == .ok && odd.json["version"] as? Int == 2_501)
            #expect((odd.json["state"] as? [String: Any])?["inUse"] as? Bool == true, "the 2,501st event put the app in the foreground")
            let even = try await api.call(.get, "/v1/users/u-1/devices/long/state?version=2000", key: admin)
            #expect((even.json["state"] as? [String: Any])?["inUse"] as? Bool == false)
            let last = try await api.call(.get, "/v1/users/u-1/devices/long/state?version=2600", key: admin)
            #expect(last.status == .ok && last.json["version"] as? Int == 2_600)
            let beyond = try await api.call(.get, "/v1/users/u-1/devices/long/state?version=2601", key: admin)
            #expect(beyond.status == .notFound, "\(beyond.text)")
        }
    }
}
