import Foundation
import HTTPTypes
import LocationGateService
import LocationGateTestSupport
import Testing

/// SPEC §14 "Partial changes" through the API: `PATCH /v1/features/{key}` changes only the
/// fields its merge patch names (RFC 7396), atomically, and every audit entry of a feature names
/// the fields it changed with their old and new values.
@Suite("HTTP: PATCH /v1/features/{key} and the changes of feature audit entries (SPEC §14)", .timeLimit(.minutes(3)))
struct FeaturePatchTests {
    static let mergePatch: HTTPFields = [.contentType: "application/merge-patch+json"]

    /// A feature with every field set to something other than its default.
    static let full = #"{"requires": "whenInUse", "services": ["standard", "heading"], "accuracy": "full", "description": "Shops nearby", "delivery": "modern", "background": true, "minAppVersion": "5.2"}"#

    static func patch(_ api: APIClient, _ key: String, _ feature: String, _ body: String, headers: HTTPFields = mergePatch) async throws -> Reply {
        try await api.call(.patch, "/v1/features/\(feature)", key: key, json: body, headers: headers)
    }

    /// The feature as GET answers it (sorted keys: equal features are equal texts).
    static func feature(_ api: APIClient, _ key: String, _ feature: String = "nearby") async throws -> Reply {
        let reply = try await api.call(.get, "/v1/features/\(feature)", key: key)
        #expect(reply.status == .ok, "\(reply.text)")
        return reply
    }

    @Test("PATCH changes only the fields it names and answers the whole feature; null resets a field to its default")
    func changesOnlyNamedFields() async throws {
        try await APIHarness.run { api in
            let (_, admin) = try await api.createApp()
            try await api.putFeature(admin, "nearby", Self.full)

            let disabled = try await Self.patch(api, admin, "nearby", #"{"disabled": true}"#)
            #expect(disabled.status == .ok, "\(disabled.text)")
            #expect(disabled.json["key"] as? String == "nearby" && disabled.json["disabled"] as? Bool == true)
            #expect(disabled.json["description"] as? String == "Shops nearby" && disabled.json["minAppVersion"] as? String == "5.2")
            #expect(disabled.json["services"] as? [String] == ["standard", "heading"] && disabled.json["accuracy"] as? String == "full")
            #expect(disabled.json["delivery"] as? String == "modern" && disabled.json["background"] as? Bool == true)
            let stored = try await Self.feature(api, admin)
            #expect(stored.text == disabled.text, "GET: \(stored.text)")

            // `application/json` is taken too; null resets to the default (absent, null, false).
            let reset = try await Self.patch(
                api, admin, "nearby", #"{"description": null, "minAppVersion": null, "disabled": null, "background": null}"#,
                headers: [.contentType: "application/json; charset=utf-8"])
            #expect(reset.status == .ok, "\(reset.text)")
            #expect(reset.json["description"] == nil && reset.json["minAppVersion"] is NSNull, "\(reset.text)")
            #expect(reset.json["disabled"] as? Bool == false && reset.json["background"] as? Bool == false, "\(reset.text)")
            #expect(reset.json["services"] as? [String] == ["standard", "heading"] && reset.json["delivery"] as? String == "modern")
            #expect(reset.json["requires"] as? String == "whenInUse" && reset.json["accuracy"] as? String == "full")

            // An empty patch changes nothing.
            let empty = try await Self.patch(api, admin, "nearby", "{}")
            #expect(empty.status == .ok && empty.text == reset.text, "\(empty.text)")
        }
    }

    @Test("PATCH refuses: an unknown key 404, a field a feature lacks 422 naming it, a bad value as PUT does; nothing changes")
    func refusals() async throws {
        try await APIHarness.run { api in
            let (_, admin) = try await api.createApp()
            try await api.putFeature(admin, "nearby", Self.full)
            let before = try await Self.feature(api, admin)

            let unknown = try await Self.patch(api, admin, "absent", #"{"disabled": true}"#)
            #expect(unknown.status == .notFound && unknown.errorCode == "notFound", "\(unknown.text)")
            #expect(try await api.call(.get, "/v1/features/absent", key: admin).status == .notFound, "a PATCH created a feature")

            let misspelt = try await Self.patch(api, admin, "nearby", #"{"disabled": true, "enabled": false}"#)
            #expect(misspelt.status == .unprocessableContent && misspelt.errorCode == "validationFailed", "\(misspelt.text)")
            #expect(misspelt.text.contains("enabled"), "\(misspelt.text)")
            let renamed = try await Self.patch(api, admin, "nearby", #"{"key": "elsewhere"}"#)
            #expect(renamed.status == .unprocessableContent && renamed.text.contains("key"), "\(renamed.text)")
            let badValue = try await Self.patch(api, admin, "nearby", #"{"requires": "never"}"#)
            #expect(badValue.status == .unprocessableContent && badValue.text.contains("requires"), "\(badValue.text)")
            let noDefault = try await Self.patch(api, admin, "nearby", #"{"requires": null}"#)
            #expect(noDefault.status == .unprocessableContent && noDefault.text.contains("requires"), "\(noDefault.text)")
            let badVersion = try await Self.patch(api, admin, "nearby", #"{"minAppVersion": "five"}"#)
            #expect(badVersion.status == .unprocessableContent && badVersion.text.contains("minAppVersion"), "\(badVersion.text)")
            let notJSON = try await Self.patch(api, admin, "nearby", #"{"disabled": tru"#)
            #expect(notJSON.status == .badRequest && notJSON.errorCode == "malformedJSON", "\(notJSON.text)")
            let notObject = try await Self.patch(api, admin, "nearby", #"[{"disabled": true}]"#)
            #expect(notObject.status == .badRequest && notObject.errorCode == "invalidRequest", "\(notObject.text)")
            let twice = try await Self.patch(api, admin, "nearby", #"{"disabled": true, "disabled": false}"#)
            #expect(twice.status == .badRequest && twice.text.contains("disabled"), "\(twice.text)")
            let text = try await Self.patch(api, admin, "nearby", #"{"disabled": true}"#, headers: [.contentType: "text/plain"])
            #expect(text.status == .badRequest && text.text.contains("Content-Type"), "\(text.text)")

            let read = try await api.createKey(admin, scope: "read")
            #expect(try await Self.patch(api, read, "nearby", #"{"disabled": true}"#).status == .forbidden)
            let anonymous = try await api.call(.patch, "/v1/features/nearby", json: #"{"disabled": true}"#, headers: Self.mergePatch)
            #expect(anonymous.status == .unauthorized)

            let after = try await Self.feature(api, admin)
            #expect(after.text == before.text, "a refused PATCH changed \(after.text)")
            let actions = try await AdminAuditTests.trail(api, admin).map(\.action)
            #expect(actions == ["appCreated", "featurePut", "keyCreated"], "a refused PATCH was recorded: \(actions)")
        }
    }

    @Test("Concurrent PATCHes of different fields all take effect: none overwrites another's field")
    func concurrentPatchesKeepEachOther() async throws {
        try await APIHarness.run { api in
            let (_, admin) = try await api.createApp()
            let patches = [
                #"{"description": "Shops nearby"}"#, #"{"disabled": true}"#, #"{"minAppVersion": "3.1"}"#,
                #"{"accuracy": "full"}"#, #"{"services": ["standard", "heading"]}"#, #"{"delivery": "modern"}"#,
                #"{"background": true}"#,
            ]
            for round in 0..<5 {
                let feature = "nearby-\(round)"
                try await api.putFeature(admin, feature, #"{"requires": "whenInUse"}"#)
                let statuses = try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
                    for body in patches {
                        group.addTask { try await Self.patch(api, admin, feature, body).status }
                    }
                    var statuses: [HTTPResponse.Status] = []
                    for try await status in group { statuses.append(status) }
                    return statuses
                }
                #expect(statuses.allSatisfy { $0 == .ok }, "\(statuses)")
                let result = try await Self.feature(api, admin, feature).json
                #expect(result["description"] as? String == "Shops nearby" && result["disabled"] as? Bool == true, "\(result)")
                #expect(result["minAppVersion"] as? String == "3.1" && result["accuracy"] as? String == "full", "\(result)")
                #expect(result["services"] as? [String] == ["standard", "heading"] && result["delivery"] as? String == "modern", "\(result)")
                #expect(result["background"] as? Bool == true && result["requires"] as? String == "whenInUse", "\(result)")
            }
        }
    }

    @Test("A PATCH of the kill switch reaches the gates at once")
    func patchReachesGates() async throws {
        try await APIHarness.run { api in
            let (_, admin) = try await api.createApp()
            try await api.putFeature(admin, "nearby", #"{"requires": "whenInUse"}"#)
            try await CatalogSafetyTests.appleDevice(api, admin, user: "u-1", device: "d-1", appVersion: "5.1")
            #expect(try await CatalogSafetyTests.gate(api, admin, "u-1", "d-1")["enabled"] as? Bool == true)
            #expect(try await Self.patch(api, admin, "nearby", #"{"disabled": true}"#).status == .ok)
            let off = try await CatalogSafetyTests.gate(api, admin, "u-1", "d-1")
            #expect(off["enabled"] as? Bool == false && off["reason"] as? String == "disabledByOperator", "\(off)")
            #expect(try await Self.patch(api, admin, "nearby", #"{"disabled": false}"#).status == .ok)
            #expect(try await CatalogSafetyTests.gate(api, admin, "u-1", "d-1")["reason"] as? String == "authorized")
        }
    }

    @Test("Feature audit entries name each changed field with from and to; a PUT or PATCH flipping disabled is one featureDisabled/featureEnabled entry")
    func auditChanges() async throws {
        try await APIHarness.run { api in
            let (_, admin, adminID) = try await AdminAuditTests.createApp(api)
            let change = AdminAuditTests.change
            try await api.putFeature(admin, "nearby", #"{"requires": "whenInUse", "description": "a"}"#)
            // A PATCH that flips the switch and changes the description: one entry with both.
            #expect(try await Self.patch(api, admin, "nearby", #"{"disabled": true, "description": "b"}"#).status == .ok)
            // A PATCH of the description alone.
            #expect(try await Self.patch(api, admin, "nearby", #"{"description": "c"}"#).status == .ok)
            // A PUT that turns it on again and, replacing the feature, drops the description.
            try await api.putFeature(admin, "nearby", #"{"requires": "whenInUse"}"#)
            #expect(try await api.call(.delete, "/v1/features/nearby", key: admin).status == .noContent)

            let entries = Array(try await AdminAuditTests.trail(api, admin).dropFirst())
            #expect(entries.map(\.action) == ["featurePut", "featureDisabled", "featurePut", "featureEnabled", "featureDeleted"])
            #expect(entries.allSatisfy { $0.target == "nearby" && $0.actor == ["keyId": .string(adminID)] })
            let changes = entries.map { $0.details["changes"] }
            #expect(changes[1] == .object(["disabled": change(.bool(false), .bool(true)), "description": change(.string("a"), .string("b"))]))
            #expect(changes[2] == .object(["description": change(.string("b"), .string("c"))]))
            #expect(changes[3] == .object(["disabled": change(.bool(true), .bool(false)), "description": change(.string("c"), nil)]))
            #expect(entries[1].details["created"] == nil && entries[3].details["created"] == .bool(false))
            if case .object(let created)? = changes[0] {
                #expect(created["description"] == change(nil, .string("a")) && created["requires"] == change(nil, .string("whenInUse")))
                #expect(created["minAppVersion"] == nil, "a field null before and after is no change")
            } else {
                Issue.record("the creation has no changes: \(entries[0].details)")
            }
            if case .object(let deleted)? = changes[4] {
                #expect(deleted["requires"] == change(.string("whenInUse"), nil) && deleted["disabled"] == change(.bool(false), nil))
            } else {
                Issue.record("the deletion has no changes: \(entries[4].details)")
            }
        }
    }
}
