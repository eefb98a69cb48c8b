import Foundation
import HTTPTypes
import LocationGateTestSupport
import Testing

/// SPEC §16 through the API, against a real database: experiments put, read, listed, stopped and
/// deleted with their status codes; the strict body; a device's evaluation, sticky, with its
/// exposure; the results as JSON and CSV; an experiment as an OFREP string flag.
@Suite("HTTP: prompt experiments (SPEC §16)", .timeLimit(.minutes(3)))
struct ExperimentAPITests {
    static let primer = #"""
        {"description": "A priming screen first", "prompt": "whenInUse",
         "variants": [{"key": "dialog", "weight": 50}, {"key": "primer", "weight": 50}]}
        """#

    static func message(_ reply: Reply) -> String {
        (reply.json["error"] as? [String: Any])?["message"] as? String ?? ""
    }

    /// An iOS device that reported its context and has not been asked yet.
    static func device(_ api: APIClient, _ key: String, user: String = "u-1", device: String = "d-1") async throws {
        let reply = try await api.append(key, [
            eventJSON("contextReported", #"{"platform": "iOS", "osVersion": "17.4", "appVersion": "5.2"}"#, user: user, device: device)
        ])
        #expect(reply.status == .ok, "\(reply.text)")
    }

    @Test("PUT answers 201 then 200 with the experiment, defaults filled in; GET one, and the list sorted by key")
    func putGetList() async throws {
        try await APIHarness.run { api in
            let (_, admin) = try await api.createApp()
            let created = try await api.call(.put, "/v1/experiments/primer", key: admin, json: Self.primer)
            #expect(created.status == .created, "\(created.text)")
            #expect(created.json["key"] as? String == "primer" && created.json["state"] as? String == "running")
            #expect(created.json["control"] as? String == "dialog" && created.json["prompt"] as? String == "whenInUse")
            #expect(created.json["guard"] is NSNull && created.json["winner"] is NSNull && created.json["stopReason"] is NSNull)
            #expect(created.json["stoppedAt"] is NSNull && created.json["createdAt"] is String)
            let eligible = created.json["eligible"] as? [String: Any]
            #expect(eligible?["platforms"] is NSNull && eligible?["statuses"] is NSNull && eligible?["minAppVersion"] is NSNull)

            // While it runs, the weights may change.
            let replaced = try await api.call(.put, "/v1/experiments/primer", key: admin, json: #"""
                {"prompt": "whenInUse", "variants": [{"key": "dialog", "weight": 20}, {"key": "primer", "weight": 80}],
                 "guard": {"maxDrop": 0.05}}
                """#)
            #expect(replaced.status == .ok, "\(replaced.text)")
            #expect((replaced.json["guard"] as? [String: Any])?["minAnswered"] as? Int == 100)
            #expect(replaced.json["description"] as? String == "")
            let weights = (replaced.json["variants"] as? [[String: Any]])?.compactMap { $0["weight"] as? Int }
            #expect(weights == [20, 80])

            let read = try await api.call(.get, "/v1/experiments/primer", key: admin)
            #expect(read.status == .ok && read.json["key"] as? String == "primer", "\(read.text)")
            let readKey = try await api.createKey(admin, scope: "read")
            let another = try await api.call(.put, "/v1/experiments/another", key: admin, json: Self.primer)
            #expect(another.status == .created)
            let list = try await api.call(.get, "/v1/experiments", key: readKey)
            #expect(list.status == .ok)
            let keys = (list.json["experiments"] as? [[String: Any]])?.compactMap { $0["key"] as? String }
            #expect(keys == ["another", "primer"], "\(list.text)")
            // A read key changes nothing.
            let forbidden = try await api.call(.put, "/v1/experiments/third", key: readKey, json: Self.primer)
            #expect(forbidden.status == .forbidden)
        }
    }

    @Test("A feature's key is 409 keyInUse, and so is a feature PUT with an experiment's key")
    func keyInUse() async throws {
        try await APIHarness.run { api in
            let (_, admin) = try await api.createApp()
            try await api.putFeature(admin, "nearby", #"{"requires": "whenInUse"}"#)
            let refused = try await api.call(.put, "/v1/experiments/nearby", key: admin, json: Self.primer)
            #expect(refused.status == .conflict && refused.errorCode == "keyInUse", "\(refused.text)")
            let created = try await api.call(.put, "/v1/experiments/primer", key: admin, json: Self.primer)
            #expect(created.status == .created)
            let feature = try await api.call(.put, "/v1/features/primer", key: admin, json: #"{"requires": "whenInUse"}"#)
            #expect(feature.status == .conflict && feature.errorCode == "keyInUse", "\(feature.text)")
            // An experiment's key in a gate request is no feature.
            let gate = try await api.call(.get, "/v1/users/u-1/devices/d-1/gates/primer", key: admin)
            #expect(gate.status == .notFound && gate.errorCode == "notFound", "\(gate.text)")
        }
    }

    @Test("Refused bodies store nothing: weights not summing to 100 name variants, an unknown field names itself")
    func refusedBodies() async throws {
        try await APIHarness.run { api in
            let (_, admin) = try await api.createApp()
            let weights = try await api.call(.put, "/v1/experiments/primer", key: admin, json: #"""
                {"prompt": "whenInUse", "variants": [{"key": "dialog", "weight": 50}, {"key": "primer", "weight": 40}]}
                """#)
            #expect(weights.status == .unprocessableContent && weights.errorCode == "validationFailed", "\(weights.text)")
            #expect(Self.message(weights).hasPrefix("variants"), "\(weights.text)")

            let unknown = try await api.call(.put, "/v1/experiments/primer", key: admin, json: #"""
                {"prompt": "whenInUse", "variants": [{"key": "dialog", "weight": 50}, {"key": "primer", "weight": 50}], "weights": [50, 50]}
                """#)
            #expect(unknown.status == .unprocessableContent && unknown.errorCode == "validationFailed", "\(unknown.text)")
            #expect(Self.message(unknown).hasPrefix("weights"), "\(unknown.text)")

            let nested = try await api.call(.put, "/v1/experiments/primer", key: admin, json: #"""
                {"prompt": "whenInUse", "variants": [{"key": "dialog", "weight": 50}, {"key": "primer", "weight": 50, "share": 1}]}
                """#)
            #expect(nested.status == .unprocessableContent, "\(nested.text)")
            #expect(Self.message(nested).hasPrefix("variants[1].share"), "\(nested.text)")

            let missing = try await api.call(.get, "/v1/experiments/primer", key: admin)
            #expect(missing.status == .notFound, "\(missing.text)")
            let list = try await api.call(.get, "/v1/experiments", key: admin)
            #expect((list.json["experiments"] as? [Any])?.isEmpty == true, "\(list.text)")
        }
    }

    @Test("Stop answers 200 with the winner, then 409 experimentStopped to a stop or a PUT; DELETE 204, then 404")
    func stopAndDelete() async throws {
        try await APIHarness.run { api in
            let (_, admin) = try await api.createApp()
            _ = try await api.call(.put, "/v1/experiments/primer", key: admin, json: Self.primer)
            let misspelt = try await api.call(.post, "/v1/experiments/primer/stop", key: admin, json: #"{"winnner": "primer"}"#)
            #expect(misspelt.status == .unprocessableContent && Self.message(misspelt).hasPrefix("winnner"), "\(misspelt.text)")
            let noVariant = try await api.call(.post, "/v1/experiments/primer/stop", key: admin, json: #"{"winner": "nope"}"#)
            #expect(noVariant.status == .unprocessableContent && Self.message(noVariant).hasPrefix("winner"), "\(noVariant.text)")

            let stopped = try await api.call(.post, "/v1/experiments/primer/stop", key: admin, json: #"{"winner": "primer"}"#)
            #expect(stopped.status == .ok, "\(stopped.text)")
            #expect(stopped.json["state"] as? String == "stopped" && stopped.json["winner"] as? String == "primer")
            #expect(stopped.json["stopReason"] as? String == "operator" && stopped.json["stoppedAt"] is String)

            let again = try await api.call(.post, "/v1/experiments/primer/stop", key: admin)
            #expect(again.status == .conflict && again.errorCode == "experimentStopped", "\(again.text)")
            let changed = try await api.call(.put, "/v1/experiments/primer", key: admin, json: Self.primer)
            #expect(changed.status == .conflict && changed.errorCode == "experimentStopped", "\(changed.text)")

            // A stopped experiment gives every device the winner.
            let evaluation = try await api.call(.get, "/v1/users/u-1/devices/d-1/experiments/primer", key: admin)
            #expect(evaluation.json["variant"] as? String == "primer" && evaluation.json["reason"] as? String == "stopped", "\(evaluation.text)")

            let deleted = try await api.call(.delete, "/v1/experiments/primer", key: admin)
            #expect(deleted.status == .noContent, "\(deleted.text)")
            let gone = try await api.call(.get, "/v1/experiments/primer", key: admin)
            #expect(gone.status == .notFound && gone.errorCode == "notFound")
            let deletedAgain = try await api.call(.delete, "/v1/experiments/primer", key: admin)
            #expect(deletedAgain.status == .notFound)
        }
    }

    @Test("A running experiment refuses a changed prompt or variant order: 409 experimentRunning")
    func runningIsFixed() async throws {
        try await APIHarness.run { api in
            let (_, admin) = try await api.createApp()
            _ = try await api.call(.put, "/v1/experiments/primer", key: admin, json: Self.primer)
            let prompt = try await api.call(.put, "/v1/experiments/primer", key: admin, json: #"""
                {"prompt": "alwaysUpgrade", "variants": [{"key": "dialog", "weight": 50}, {"key": "primer", "weight": 50}]}
                """#)
            #expect(prompt.status == .conflict && prompt.errorCode == "experimentRunning", "\(prompt.text)")
            let order = try await api.call(.put, "/v1/experiments/primer", key: admin, json: #"""
                {"prompt": "whenInUse", "variants": [{"key": "primer", "weight": 50}, {"key": "dialog", "weight": 50}], "control": "dialog"}
                """#)
            #expect(order.status == .conflict && order.errorCode == "experimentRunning", "\(order.text)")
        }
    }

    @Test("A device's evaluation: assigned with its exposure, the same variant again; an unknown key is 404")
    func evaluation() async throws {
        try await APIHarness.run { api in
            let (_, admin) = try await api.createApp()
            _ = try await api.call(.put, "/v1/experiments/primer", key: admin, json: Self.primer)
            try await Self.device(api, admin)
            let readKey = try await api.createKey(admin, scope: "read")
            let first = try await api.call(.get, "/v1/users/u-1/devices/d-1/experiments/primer", key: readKey)
            #expect(first.status == .ok, "\(first.text)")
            #expect(first.json["experiment"] as? String == "primer" && first.json["reason"] as? String == "assigned", "\(first.text)")
            let variant = first.json["variant"] as? String
            #expect(variant == "dialog" || variant == "primer")
            let exposedAt = first.json["exposedAt"] as? String
            #expect(exposedAt != nil, "\(first.text)")
            let second = try await api.call(.get, "/v1/users/u-1/devices/d-1/experiments/primer", key: readKey)
            #expect(second.json["variant"] as? String == variant && second.json["reason"] as? String == "assigned")
            #expect(second.json["exposedAt"] as? String == exposedAt, "\(second.text)")

            let unknown = try await api.call(.get, "/v1/users/u-1/devices/d-1/experiments/nope", key: readKey)
            #expect(unknown.status == .notFound && unknown.errorCode == "notFound", "\(unknown.text)")
        }
    }

    @Test("Results: JSON rows, the control first, every field present; CSV with its header")
    func results() async throws {
        try await APIHarness.run { api in
            let (_, admin) = try await api.createApp()
            _ = try await api.call(.put, "/v1/experiments/primer", key: admin, json: #"""
                {"prompt": "whenInUse", "control": "primer",
                 "variants": [{"key": "dialog", "weight": 50}, {"key": "primer", "weight": 50}]}
                """#)
            try await Self.device(api, admin)
            let evaluation = try await api.call(.get, "/v1/users/u-1/devices/d-1/experiments/primer", key: admin)
            #expect(evaluation.status == .ok)

            let results = try await api.call(.get, "/v1/experiments/primer/results", key: admin)
            #expect(results.status == .ok, "\(results.text)")
            #expect(results.json["experiment"] as? String == "primer" && results.json["state"] as? String == "running")
            let rows = results.json["variants"] as? [[String: Any]] ?? []
            #expect(rows.compactMap { $0["variant"] as? String } == ["primer", "dialog"], "\(results.text)")
            let fields: Set<String> = [
                "variant", "exposed", "answered", "granted", "grantRate", "ci95", "exposedGrantRate", "ci95Exposed", "uplift", "pValue",
            ]
            for row in rows { #expect(Set(row.keys) == fields, "\(row)") }
            #expect(rows.reduce(0) { $0 + ($1["exposed"] as? Int ?? 0) } == 1, "\(results.text)")
            #expect(rows.first?["uplift"] is NSNull && rows.first?["pValue"] is NSNull)

            let csv = try await api.call(.get, "/v1/experiments/primer/results", key: admin, headers: [.accept: "text/csv"])
            #expect(csv.status == .ok && csv.headers[.contentType]?.hasPrefix("text/csv") == true)
            let lines = csv.text.split(separator: "\n").map(String.init)
            #expect(lines.first == "variant,exposed,answered,granted,grantRate,ci95Low,ci95High,exposedGrantRate,ci95ExposedLow,ci95ExposedHigh,uplift,pValue")
            #expect(lines.count == 3 && lines[1].hasPrefix("primer,") && lines[2].hasPrefix("dialog,"), "\(csv.text)")

            let unknown = try await api.call(.get, "/v1/experiments/nope/results", key: admin)
            #expect(unknown.status == .notFound)
        }
    }

    @Test("OFREP: an experiment is a string flag, SPLIT for an assigned device, DEFAULT without one; in the bulk answer too")
    func ofrep() async throws {
        try await APIHarness.run { api in
            let (_, admin) = try await api.createApp()
            try await api.putFeature(admin, "nearby", #"{"requires": "whenInUse"}"#)
            _ = try await api.call(.put, "/v1/experiments/primer", key: admin, json: Self.primer)
            try await Self.device(api, admin)
            let context = #"{"context": {"targetingKey": "u-1", "deviceId": "d-1"}}"#
            let single = try await api.call(.post, "/ofrep/v1/evaluate/flags/primer", key: admin, json: context)
            #expect(single.status == .ok, "\(single.text)")
            let value = single.json["value"] as? String
            #expect(value == "dialog" || value == "primer", "\(single.text)")
            #expect(single.json["variant"] as? String == value && single.json["reason"] as? String == "SPLIT")
            #expect(single.json["key"] as? String == "primer")
            // The same variant as the experiment's own evaluation.
            let evaluation = try await api.call(.get, "/v1/users/u-1/devices/d-1/experiments/primer", key: admin)
            #expect(evaluation.json["variant"] as? String == value)

            let userLevel = try await api.call(.post, "/ofrep/v1/evaluate/flags/primer", key: admin, json: #"{"context": {"targetingKey": "u-1"}}"#)
            #expect(userLevel.json["value"] as? String == "dialog" && userLevel.json["reason"] as? String == "DEFAULT", "\(userLevel.text)")

            let bulk = try await api.call(.post, "/ofrep/v1/evaluate/flags", key: admin, json: context)
            #expect(bulk.status == .ok, "\(bulk.text)")
            let flags = bulk.json["flags"] as? [[String: Any]] ?? []
            #expect(flags.compactMap { $0["key"] as? String } == ["nearby", "primer"], "\(bulk.text)")
            #expect(flags.last?["value"] as? String == value)
            let etag = bulk.headers[.eTag] ?? ""
            #expect(!etag.isEmpty)

            // A stop changes the bulk answer, and its ETag.
            let stopped = try await api.call(.post, "/v1/experiments/primer/stop", key: admin, json: #"{"winner": "primer"}"#)
            #expect(stopped.status == .ok)
            let after = try await api.call(.post, "/ofrep/v1/evaluate/flags", key: admin, json: context, headers: [.ifNoneMatch: etag])
            #expect(after.status == .ok && after.headers[.eTag] != etag, "\(after.status)")
            let stoppedFlag = (after.json["flags"] as? [[String: Any]])?.last
            #expect(stoppedFlag?["value"] as? String == "primer" && stoppedFlag?["reason"] as? String == "STATIC")

            let missing = try await api.call(.post, "/ofrep/v1/evaluate/flags/nope", key: admin, json: context)
            #expect(missing.status == .notFound && missing.json["errorCode"] as? String == "FLAG_NOT_FOUND")
        }
    }
}
