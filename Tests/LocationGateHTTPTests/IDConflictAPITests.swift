import Foundation
import HTTPTypes
import Testing

/// SPEC §14 over HTTP: an event whose id is stored already with other content is 409
/// `idConflict` with the first such index, after the batch's 4xx validation errors, and the
/// batch stores nothing; the same content again (the data in its stored form, the time as an
/// instant) is a duplicate as before. Small batches go through group commit, large ones alone:
/// both are checked.
@Suite("HTTP: id conflicts", .timeLimit(.minutes(2)))
struct IDConflictAPITests {
    @Test("Another user, device, type, data or time under a stored id is 409 idConflict naming the event; nothing is stored")
    func conflicts() async throws {
        try await APIHarness.run { api in
            let (_, admin) = try await api.createApp()
            let id = UUID()
            let first = try await api.append(admin, [eventJSON("authorizationRequested", #"{"request": "whenInUse"}"#, id: id)])
            #expect(first.status == .ok, "\(first.text)")
            let fresh = eventJSON("locationServicesChanged", #"{"enabled": true}"#)
            for changed in [
                eventJSON("authorizationRequested", #"{"request": "whenInUse"}"#, user: "u-2", id: id),
                eventJSON("authorizationRequested", #"{"request": "whenInUse"}"#, device: "d-2", id: id),
                eventJSON("locationServicesChanged", #"{"enabled": true}"#, id: id),
                eventJSON("authorizationRequested", #"{"request": "always"}"#, id: id),
                eventJSON("authorizationRequested", #"{"request": "whenInUse"}"#, id: id, at: "2026-11-22T10:00:00.001Z"),
            ] {
                let reply = try await api.append(admin, [fresh, changed])
                #expect(reply.status == .conflict && reply.errorCode == "idConflict" && reply.errorIndex == 1, "\(reply.text)")
            }
            let history = try await api.call(.get, "/v1/users/u-1/devices/d-1/history", key: admin)
            #expect((history.json["entries"] as? [Any])?.count == 1, "\(history.text)")
            #expect((try await api.call(.get, "/v1/users/u-2/devices/d-1/history", key: admin).json["entries"] as? [Any])?.isEmpty == true)
        }
    }

    @Test("The same event again is a duplicate: data in another order and with fields it does not keep, the time in another zone")
    func sameContent() async throws {
        try await APIHarness.run { api in
            let (_, admin) = try await api.createApp()
            let id = UUID()
            let stored = eventJSON(
                "contextReported", #"{"platform": "iOS", "osVersion": "17.4", "appVersion": "3.2.0"}"#, id: id)
            #expect(try await api.append(admin, [stored]).status == .ok)
            let again = eventJSON(
                "contextReported", #"{"appVersion": "3.2.0", "osVersion": "17.4.0", "platform": "iOS", "futureField": 1}"#,
                id: id, at: "2026-11-22T11:00:00+01:00")
            let reply = try await api.append(admin, [again])
            let result = (reply.json["results"] as? [[String: Any]])?.first
            #expect(reply.status == .ok && result?["duplicate"] as? Bool == true && result?["version"] as? Int == 1, "\(reply.text)")
        }
    }

    @Test("Validation errors come first; the first conflicting index is named; a batch beyond group commit too")
    func orderAndLargeBatches() async throws {
        try await APIHarness.run { api in
            let (_, admin) = try await api.createApp()
            let (a, b) = (UUID(), UUID())
            _ = try await api.append(admin, [
                eventJSON("appStateChanged", #"{"state": "foreground"}"#, id: a),
                eventJSON("appStateChanged", #"{"state": "background"}"#, id: b),
            ])
            // A 422 at index 2 wins over the conflict at index 0.
            let invalid = try await api.append(admin, [
                eventJSON("appStateChanged", #"{"state": "background"}"#, id: a),
                eventJSON("appStateChanged", #"{"state": "foreground"}"#),
                eventJSON("authorizationRequested", #"{"request": "sometimes"}"#),
            ])
            #expect(invalid.status == .unprocessableContent && invalid.errorCode == "validationFailed" && invalid.errorIndex == 2)
            // Two conflicts: the first by index.
            let two = try await api.append(admin, [
                eventJSON("appStateChanged", #"{"state": "foreground"}"#, id: b),
                eventJSON("appStateChanged", #"{"state": "foreground"}"#, user: "u-9", id: a),
            ])
            #expect(two.status == .conflict && two.errorIndex == 0, "\(two.text)")
            // 150 events (appended in a transaction of their own), the conflict last.
            var large = (0..<149).map { _ in eventJSON("appStateChanged", #"{"state": "foreground"}"#, device: "d-big") }
            large.append(eventJSON("appStateChanged", #"{"state": "foreground"}"#, device: "d-big", id: a))
            let big = try await api.append(admin, large)
            #expect(big.status == .conflict && big.errorCode == "idConflict" && big.errorIndex == 149, "\(big.text.prefix(300))")
            let history = try await api.call(.get, "/v1/users/u-1/devices/d-big/history", key: admin)
            #expect((history.json["entries"] as? [Any])?.isEmpty == true)
            // The same ids resent unchanged are duplicates.
            let resent = try await api.append(admin, [
                eventJSON("appStateChanged", #"{"state": "foreground"}"#, id: a),
                eventJSON("appStateChanged", #"{"state": "background"}"#, id: b),
            ])
            let results = resent.json["results"] as? [[String: Any]] ?? []
            #expect(resent.status == .ok && results.map { $0["duplicate"] as? Bool } == [true, true], "\(resent.text)")
        }
    }
}
