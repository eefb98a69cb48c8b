import Foundation
import HTTPTypes
import Testing

@Suite("HTTP: features and events", .timeLimit(.minutes(2)))
struct FeaturesAndEventsTests {
    @Test("Features: PUT creates (201) then replaces (200); GET lists and reads; DELETE 204; errors; isolation")
    func features() async throws {
        try await APIHarness.run { api in
            let (_, admin) = try await api.createApp()
            let definition = #"{"requires": "always", "services": ["regionMonitoring"], "accuracy": "any", "description": "lights"}"#
            let created = try await api.call(.put, "/v1/features/arrival-lights", key: admin, json: definition)
            #expect(created.status == .created)
            #expect(created.json["key"] as? String == "arrival-lights" && created.json["requires"] as? String == "always")
            let replaced = try await api.call(.put, "/v1/features/arrival-lights", key: admin, json: #"{"requires": "whenInUse"}"#)
            #expect(replaced.status == .ok && replaced.json["requires"] as? String == "whenInUse")
            let list = try await api.call(.get, "/v1/features", key: admin)
            #expect((list.json["features"] as? [[String: Any]])?.compactMap { $0["key"] as? String } == ["arrival-lights"])
            #expect(try await api.call(.get, "/v1/features/arrival-lights", key: admin).json["accuracy"] as? String == "any")
            #expect(try await api.call(.get, "/v1/features/nope", key: admin).status == .notFound)
            let badTier = try await api.call(.put, "/v1/features/x", key: admin, json: #"{"requires": "sometimes"}"#)
            #expect(badTier.status == .unprocessableContent && badTier.errorCode == "validationFailed")
            let badService = try await api.call(.put, "/v1/features/x", key: admin, json: #"{"requires": "always", "services": ["teleport"]}"#)
            #expect(badService.status == .unprocessableContent)
            let missing = try await api.call(.put, "/v1/features/x", key: admin, json: #"{"services": []}"#)
            #expect(missing.status == .badRequest && missing.errorCode == "invalidRequest")
            #expect(try await api.call(.put, "/v1/features/x", key: admin, json: "[").errorCode == "malformedJSON")
            #expect(try await api.call(.put, "/v1/features/bad%20key", key: admin, json: #"{"requires": "always"}"#).status == .unprocessableContent)
            // Another app sees none of it.
            let (_, other) = try await api.createApp("other")
            #expect(try await api.call(.get, "/v1/features/arrival-lights", key: other).status == .notFound)
            #expect(try await api.call(.delete, "/v1/features/arrival-lights", key: other).status == .notFound)
            #expect(try await api.call(.delete, "/v1/features/arrival-lights", key: admin).status == .noContent)
            #expect(try await api.call(.get, "/v1/features/arrival-lights", key: admin).status == .notFound)
            #expect(try await api.call(.get, "/v1/features", key: nil).status == .unauthorized)
        }
    }

    @Test("POST /v1/events: results per event with versions, effects and status; duplicates answered from the log")
    func appendAndDuplicate() async throws {
        try await APIHarness.run { api in
            let (_, admin) = try await api.createApp()
            let first = UUID()
            let batch = [
                eventJSON("authorizationRequested", #"{"request": "always"}"#, id: first),
                eventJSON("promptResponded", #"{"choice": "allowWhileUsing"}"#),
            ]
            let reply = try await api.append(admin, batch)
            #expect(reply.status == .ok, "\(reply.text)")
            let results = reply.json["results"] as? [[String: Any]] ?? []
            #expect(results.map { $0["version"] as? Int } == [1, 2])
            #expect(results.map { $0["status"] as? String } == ["notDetermined", "authorizedAlways"])
            #expect(results.map { $0["duplicate"] as? Bool } == [false, false])
            #expect((results.first?["effects"] as? [[String: Any]])?.first?["prompt"] as? String == "alwaysFirst")
            #expect(results.first?["id"] as? String == first.uuidString.lowercased())
            // The same id again, with an expectedVersion that would conflict: the stored result.
            let again = try await api.append(admin, [eventJSON("authorizationRequested", #"{"request": "always"}"#, id: first, expectedVersion: 9)])
            let duplicate = (again.json["results"] as? [[String: Any]])?.first
            #expect(again.status == .ok && duplicate?["duplicate"] as? Bool == true && duplicate?["version"] as? Int == 1)
            #expect((duplicate?["effects"] as? [[String: Any]])?.first?["kind"] as? String == "promptShown")
        }
    }

    @Test("POST /v1/events errors: 409, 422 with index, 400, 413; a rejected batch stores nothing")
    func appendErrors() async throws {
        try await APIHarness.run { api in
            let (_, admin) = try await api.createApp()
            let history = "/v1/users/u-1/devices/d-1/history"
            let good = eventJSON("authorizationRequested", #"{"request": "whenInUse"}"#)
            let conflict = try await api.append(admin, [good, eventJSON("locationServicesChanged", #"{"enabled": true}"#, expectedVersion: 5)])
            #expect(conflict.status == .conflict && conflict.errorCode == "versionConflict" && conflict.errorIndex == 1)
            let rule = try await api.append(admin, [good, eventJSON("promptResponded", #"{"choice": "changeToAlwaysAllow"}"#)])
            #expect(rule.status == .unprocessableContent && rule.errorCode == "ruleViolation" && rule.errorIndex == 1)
            #expect((rule.json["error"] as? [String: Any])?["message"] as? String
                == "promptResponded: choice changeToAlwaysAllow is not offered by the whenInUse prompt (it offers allowWhileUsing, allowOnce, dontAllow)")
            let vocabulary = try await api.append(admin, [good, eventJSON("authorizationRequested", #"{"request": "sometimes"}"#)])
            #expect(vocabulary.status == .unprocessableContent && vocabulary.errorCode == "validationFailed" && vocabulary.errorIndex == 1)
            let id = UUID()
            let twice = try await api.append(admin, [eventJSON("appStateChanged", #"{"state": "foreground"}"#, id: id), eventJSON("appStateChanged", #"{"state": "foreground"}"#, id: id)])
            #expect(twice.status == .unprocessableContent && twice.errorIndex == 1)
            let badUser = try await api.append(admin, [eventJSON("appStateChanged", #"{"state": "foreground"}"#, user: "no spaces")])
            #expect(badUser.status == .unprocessableContent && badUser.errorCode == "validationFailed" && badUser.errorIndex == 0)
            let mistyped = try await api.append(admin, [eventJSON("locationServicesChanged", #"{"enabled": "yes"}"#)])
            #expect(mistyped.status == .badRequest && mistyped.errorCode == "invalidRequest" && mistyped.errorIndex == 0)
            let tvOS = [eventJSON("contextReported", #"{"platform": "tvOS"}"#, user: "tv"), eventJSON("authorizationRequested", #"{"request": "always"}"#, user: "tv")]
            #expect(try await api.append(admin, tvOS).errorCode == "ruleViolation")
            #expect(try await api.call(.post, "/v1/events", key: admin, json: "nope").errorCode == "malformedJSON")
            #expect(try await api.call(.post, "/v1/events", key: admin, json: #"{"event": []}"#).errorCode == "invalidRequest")
            let many = Array(repeating: eventJSON("appStateChanged", #"{"state": "foreground"}"#), count: 1001)
            let tooMany = try await api.append(admin, many.map { _ in eventJSON("appStateChanged", #"{"state": "foreground"}"#) })
            #expect(tooMany.status == .contentTooLarge && tooMany.errorCode == "tooLarge")
            let padding = String(repeating: "x", count: 1 << 20)
            let huge = try await api.call(.post, "/v1/events", key: admin, json: #"{"events": [], "pad": "\#(padding)"}"#)
            #expect(huge.status == .contentTooLarge && huge.errorCode == "tooLarge")
            #expect(try await api.call(.post, "/v1/events", json: #"{"events": []}"#).status == .unauthorized)
            // Nothing of any rejected batch was stored.
            let stored = try await api.call(.get, history, key: admin)
            #expect((stored.json["entries"] as? [Any])?.isEmpty == true, "\(stored.text)")
            #expect((try await api.call(.get, "/v1/users/tv/devices/d-1/history", key: admin).json["entries"] as? [Any])?.isEmpty == true)
        }
    }
}
