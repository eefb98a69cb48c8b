import Foundation
import HTTPTypes
import LocationGateTestSupport
import Testing

/// SPEC §16 through the API, beside `ExperimentAPITests`: Android's `dismissed` counted as an
/// answer that grants nothing, the results' CSV figures, a person's export listing exposures
/// per device, OFREP's reasons and a request without a device that exposes nothing, the bulk
/// evaluation of every experiment, and an experiment's key in a gate request.
@Suite("HTTP: prompt experiments, SPEC §16 conformance", .timeLimit(.minutes(3)))
struct ExperimentConformanceAPITests {
    static func android(_ user: String) -> String {
        eventJSON("contextReported", #"{"platform": "android", "apiLevel": 34, "targetSdk": 34, "appVersion": "5.0"}"#, user: user, device: "phone")
    }

    static func iOS(_ user: String, device: String = "d-1") -> String {
        eventJSON("contextReported", #"{"platform": "iOS", "osVersion": "17.4", "appVersion": "5.2"}"#, user: user, device: device)
    }

    static func rows(_ reply: Reply) -> [[String: Any]] { reply.json["variants"] as? [[String: Any]] ?? [] }

    @Test("Android: a dismissed dialog is an answer that grants nothing; the CSV has §16's columns, the control first, empty cells for nulls")
    func androidDismissed() async throws {
        try await APIHarness.runWithService(privateDatabase: "experiment_android") { api, _ in
            let (_, admin) = try await api.createApp()
            let created = try await api.call(.put, "/v1/experiments/foreground", key: admin, json: #"""
                {"prompt": "foreground", "control": "dialog", "eligible": {"platforms": ["android"]},
                 "variants": [{"key": "button", "weight": 0}, {"key": "dialog", "weight": 100}]}
                """#)
            #expect(created.status == .created, "\(created.text)")
            let request = #"{"permissions": ["coarse", "fine"]}"#
            for user in ["dismisses", "grants"] {
                #expect(try await api.append(admin, [Self.android(user)]).status == .ok)
                let exposed = try await api.call(.get, "/v1/users/\(user)/devices/phone/experiments/foreground", key: admin)
                #expect(exposed.json["variant"] as? String == "dialog" && exposed.json["reason"] as? String == "assigned", "\(exposed.text)")
            }
            let answers = try await api.append(admin, [
                eventJSON("permissionsRequested", request, user: "dismisses", device: "phone"),
                eventJSON("permissionsResult", #"{"granted": [], "denied": ["coarse", "fine"], "rationale": [], "interrupted": false}"#, user: "dismisses", device: "phone"),
                eventJSON("permissionsRequested", request, user: "grants", device: "phone"),
                eventJSON("permissionsResult", #"{"granted": ["coarse", "fine"], "denied": [], "interrupted": false}"#, user: "grants", device: "phone"),
            ])
            #expect(answers.status == .ok, "\(answers.text)")
            let results = answers.json["results"] as? [[String: Any]] ?? []
            let dismissal = (results.dropFirst().first?["effects"] as? [[String: Any]])?.first
            #expect(dismissal?["choice"] as? String == "dismissed", "\(answers.text)")

            // An iOS device is not eligible: the control, and nothing counted.
            #expect(try await api.append(admin, [Self.iOS("apple")]).status == .ok)
            let apple = try await api.call(.get, "/v1/users/apple/devices/d-1/experiments/foreground", key: admin)
            #expect(apple.json["reason"] as? String == "notEligible" && apple.json["exposedAt"] is NSNull, "\(apple.text)")

            var reply = try await api.call(.get, "/v1/experiments/foreground/results", key: admin)
            _ = try await waitUntil(timeout: .seconds(60), poll: .milliseconds(50)) {
                reply = try await api.call(.get, "/v1/experiments/foreground/results", key: admin)
                return Self.rows(reply).first?["answered"] as? Int == 2
            }
            let rows = Self.rows(reply)
            #expect(rows.compactMap { $0["variant"] as? String } == ["dialog", "button"], "\(reply.text)")
            let control = try #require(rows.first)
            #expect(control["exposed"] as? Int == 2 && control["answered"] as? Int == 2 && control["granted"] as? Int == 1, "\(reply.text)")
            #expect(control["grantRate"] as? Double == 0.5 && control["exposedGrantRate"] as? Double == 0.5, "\(reply.text)")
            let interval = try #require(control["ci95"] as? [Double])
            #expect(interval.count == 2 && abs(interval[0] - 0.09453120463920084) < 1e-6 && abs(interval[1] - 0.9054687953607992) < 1e-6, "\(interval)")
            #expect(control["uplift"] is NSNull && control["pValue"] is NSNull)
            let button = try #require(rows.last)
            for field in ["grantRate", "ci95", "exposedGrantRate", "ci95Exposed", "uplift", "pValue"] {
                #expect(button[field] is NSNull, "button \(field): \(reply.text)")
            }

            let csv = try await api.call(.get, "/v1/experiments/foreground/results", key: admin, headers: [.accept: "text/csv"])
            #expect(csv.status == .ok && csv.headers[.contentType]?.hasPrefix("text/csv") == true, "\(csv.text)")
            let lines = csv.text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            #expect(lines.first == "variant,exposed,answered,granted,grantRate,ci95Low,ci95High,exposedGrantRate,ci95ExposedLow,ci95ExposedHigh,uplift,pValue")
            let cells = lines.count > 1 ? lines[1].split(separator: ",", omittingEmptySubsequences: false).map(String.init) : []
            #expect(cells.count == 12, "\(csv.text)")
            #expect(Array(cells.prefix(5)) == ["dialog", "2", "2", "1", "0.5"], "\(csv.text)")
            #expect(cells.count == 12 && abs((Double(cells[5]) ?? -1) - 0.09453120463920084) < 1e-6 && cells[10] == "" && cells[11] == "", "\(csv.text)")
            #expect(lines.count > 2 && lines[2] == "button,0,0,0,,,,,,,,", "\(csv.text)")
        }
    }

    @Test("A person's export lists each device's exposures as experiments [{experiment, variant, exposedAt}]; a device never exposed lists none")
    func exportListsExposures() async throws {
        try await APIHarness.run { api in
            let (_, admin) = try await api.createApp()
            for key in ["b-later", "a-first"] {
                let reply = try await api.call(.put, "/v1/experiments/\(key)", key: admin, json: #"""
                    {"prompt": "whenInUse", "variants": [{"key": "dialog", "weight": 0}, {"key": "primer", "weight": 100}]}
                    """#)
                #expect(reply.status == .created, "\(reply.text)")
            }
            #expect(try await api.append(admin, [Self.iOS("person", device: "phone"), Self.iOS("person", device: "tablet")]).status == .ok)
            var exposedAt: [String: String] = [:]
            for key in ["a-first", "b-later"] {
                let reply = try await api.call(.get, "/v1/users/person/devices/phone/experiments/\(key)", key: admin)
                exposedAt[key] = reply.json["exposedAt"] as? String
            }
            let export = try await api.call(.get, "/v1/users/person/export", key: admin)
            #expect(export.status == .ok, "\(export.text)")
            let devices = export.json["devices"] as? [[String: Any]] ?? []
            #expect(devices.compactMap { $0["deviceId"] as? String } == ["phone", "tablet"], "\(export.text)")
            let phone = devices.first?["experiments"] as? [[String: Any]] ?? []
            #expect(phone.compactMap { $0["experiment"] as? String } == ["a-first", "b-later"], "\(export.text)")
            for listed in phone {
                #expect(Set(listed.keys) == ["experiment", "variant", "exposedAt"], "\(listed)")
                #expect(listed["variant"] as? String == "primer")
                let key = listed["experiment"] as? String ?? ""
                #expect(listed["exposedAt"] as? String == exposedAt[key] && exposedAt[key] != nil, "\(listed)")
            }
            #expect((devices.last?["experiments"] as? [Any])?.isEmpty == true, "\(export.text)")
        }
    }

    @Test("OFREP: SPLIT with the variant key as value and variant; DEFAULT for a device not eligible and for a request without a device, which exposes nothing; STATIC once stopped; the bulk evaluation holds every experiment after the features; the ETag changes with a stop")
    func ofrepReasons() async throws {
        try await APIHarness.run { api in
            let (_, admin) = try await api.createApp()
            let read = try await api.createKey(admin, scope: "read")
            try await api.putFeature(admin, "nearby", #"{"requires": "whenInUse"}"#)
            let everyone = #"{"prompt": "whenInUse", "control": "dialog", "variants": [{"key": "dialog", "weight": 0}, {"key": "primer", "weight": 100}]}"#
            let androidOnly = #"{"prompt": "foreground", "variants": [{"key": "dialog", "weight": 50}, {"key": "button", "weight": 50}], "eligible": {"platforms": ["android"]}}"#
            #expect(try await api.call(.put, "/v1/experiments/primer", key: admin, json: everyone).status == .created)
            #expect(try await api.call(.put, "/v1/experiments/android-only", key: admin, json: androidOnly).status == .created)
            #expect(try await api.call(.put, "/v1/experiments/zz-stopped", key: admin, json: everyone).status == .created)
            #expect(try await api.call(.post, "/v1/experiments/zz-stopped/stop", key: admin, json: #"{"winner": "primer"}"#).status == .ok)
            #expect(try await api.append(admin, [Self.iOS("u-1")]).status == .ok)

            // Without a device: the control, DEFAULT (the winner, STATIC, once stopped); no exposure.
            let userLevel = #"{"context": {"targetingKey": "u-1"}}"#
            let noDevice = try await api.call(.post, "/ofrep/v1/evaluate/flags/primer", key: read, json: userLevel)
            #expect(noDevice.status == .ok && noDevice.json["value"] as? String == "dialog" && noDevice.json["variant"] as? String == "dialog", "\(noDevice.text)")
            #expect(noDevice.json["reason"] as? String == "DEFAULT", "\(noDevice.text)")
            let noDeviceStopped = try await api.call(.post, "/ofrep/v1/evaluate/flags/zz-stopped", key: read, json: userLevel)
            #expect(noDeviceStopped.json["value"] as? String == "primer" && noDeviceStopped.json["reason"] as? String == "STATIC", "\(noDeviceStopped.text)")
            let userBulk = try await api.call(.post, "/ofrep/v1/evaluate/flags", key: read, json: userLevel)
            #expect((userBulk.json["flags"] as? [[String: Any]])?.compactMap { $0["key"] as? String } == ["nearby", "android-only", "primer", "zz-stopped"], "\(userBulk.text)")
            let untouched = try await api.call(.get, "/v1/experiments/primer/results", key: read)
            #expect(Self.rows(untouched).reduce(0) { $0 + ($1["exposed"] as? Int ?? -1) } == 0, "\(untouched.text)")
            let stillUnexposed = try await api.call(.get, "/v1/users/u-1/devices/d-1/experiments/zz-stopped", key: read)
            #expect(stillUnexposed.json["exposedAt"] is NSNull && stillUnexposed.json["reason"] as? String == "stopped", "\(stillUnexposed.text)")

            // With a device: SPLIT, a string value; DEFAULT not eligible; STATIC stopped.
            let context = #"{"context": {"targetingKey": "u-1", "deviceId": "d-1"}}"#
            let split = try await api.call(.post, "/ofrep/v1/evaluate/flags/primer", key: read, json: context)
            #expect(split.json["value"] as? String == "primer" && split.json["variant"] as? String == "primer" && split.json["reason"] as? String == "SPLIT", "\(split.text)")
            let notEligible = try await api.call(.post, "/ofrep/v1/evaluate/flags/android-only", key: read, json: context)
            #expect(notEligible.json["value"] as? String == "dialog" && notEligible.json["reason"] as? String == "DEFAULT", "\(notEligible.text)")
            let stopped = try await api.call(.post, "/ofrep/v1/evaluate/flags/zz-stopped", key: read, json: context)
            #expect(stopped.json["value"] as? String == "primer" && stopped.json["reason"] as? String == "STATIC", "\(stopped.text)")
            let exposed = try await api.call(.get, "/v1/experiments/primer/results", key: read)
            #expect(Self.rows(exposed).reduce(0) { $0 + ($1["exposed"] as? Int ?? -1) } == 1, "\(exposed.text)")

            // The bulk evaluation: every feature, then every experiment by key.
            let bulk = try await api.call(.post, "/ofrep/v1/evaluate/flags", key: read, json: context)
            #expect(bulk.status == .ok, "\(bulk.text)")
            let flags = bulk.json["flags"] as? [[String: Any]] ?? []
            #expect(flags.compactMap { $0["key"] as? String } == ["nearby", "android-only", "primer", "zz-stopped"], "\(bulk.text)")
            #expect(flags.compactMap { $0["reason"] as? String }.dropFirst() == ["DEFAULT", "SPLIT", "STATIC"], "\(bulk.text)")
            let etag = try #require(bulk.headers[.eTag])
            let unchanged = try await api.call(.post, "/ofrep/v1/evaluate/flags", key: read, json: context, headers: [.ifNoneMatch: etag])
            #expect(unchanged.status == .notModified, "\(unchanged.status)")
            #expect(try await api.call(.post, "/v1/experiments/primer/stop", key: admin).status == .ok)
            let after = try await api.call(.post, "/ofrep/v1/evaluate/flags", key: read, json: context, headers: [.ifNoneMatch: etag])
            #expect(after.status == .ok && after.headers[.eTag] != nil && after.headers[.eTag] != etag, "\(after.status)")
            let primer = (after.json["flags"] as? [[String: Any]])?.first { $0["key"] as? String == "primer" }
            #expect(primer?["value"] as? String == "dialog" && primer?["reason"] as? String == "STATIC", "\(after.text)")
        }
    }

    @Test("An experiment's key in a gate request is a 404, for any key scope, and the device's gates list no experiment")
    func gateRequestIsNotFound() async throws {
        try await APIHarness.run { api in
            let (_, admin) = try await api.createApp()
            let read = try await api.createKey(admin, scope: "read")
            try await api.putFeature(admin, "nearby", #"{"requires": "whenInUse"}"#)
            let everyone = #"{"prompt": "whenInUse", "variants": [{"key": "dialog", "weight": 50}, {"key": "primer", "weight": 50}]}"#
            #expect(try await api.call(.put, "/v1/experiments/primer", key: admin, json: everyone).status == .created)
            #expect(try await api.append(admin, [Self.iOS("u-1")]).status == .ok)
            for key in [admin, read] {
                let gate = try await api.call(.get, "/v1/users/u-1/devices/d-1/gates/primer", key: key)
                #expect(gate.status == .notFound && gate.errorCode == "notFound", "\(gate.text)")
            }
            let gates = try await api.call(.get, "/v1/users/u-1/devices/d-1/gates", key: read)
            #expect(gates.status == .ok && !gates.text.contains("primer"), "\(gates.text)")
            // A gate request exposes no one.
            let results = try await api.call(.get, "/v1/experiments/primer/results", key: read)
            #expect(Self.rows(results).reduce(0) { $0 + ($1["exposed"] as? Int ?? -1) } == 0, "\(results.text)")
        }
    }
}
