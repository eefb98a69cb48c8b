import Foundation
import LocationAuthorization
import LocationGateClient
import LocationGateTestSupport
import Testing

/// SPEC §11 end to end: an iOS 18 app's service sessions, diagnostics and background activity,
/// recorded through `EventRecorder`, queued on disk and sent by `EventSender` to a real
/// `locgate serve`, and read back from the server's history and device state.
@Suite("Service sessions and diagnostics from LocationGateClient to a real locgate serve", .timeLimit(.minutes(5)))
struct SessionEventsEndToEndTests {
    @Test("Context, foreground, an always session, diagnostics, a layered session invalidated, background activity: versions 1-8 with their effects, and the state holds the session and the activity")
    func sessionEventsReachTheDeviceState() async throws {
        // Below Linux's ephemeral ports, apart from ClientEndToEndTests' 12,000-20,000 and
        // TwoProcessTests' 24,000-32,000, which may run at the same time.
        let server = try await ServerFixture.start(ports: 20_000..<24_000)
        defer { server.stop() }
        let port = server.port

        let (adminKey, _) = try await server.createApp("client-sessions")
        let ingestKey = try await server.createKey(adminKey: adminKey).key

        // What an iOS 18 app records when the person starts navigation.
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let queue = try EventQueue(directory: directory.url)
        defer { queue.close() }
        let recorder = EventRecorder(userId: "user-1", deviceId: "iphone-1", queue: queue)
        let context = DeviceContext(
            platform: .iOS, osVersion: OSVersion(18, 0), appVersion: "3.1",
            usageDescriptions: [UsageDescriptionKey.whenInUse, UsageDescriptionKey.alwaysAndWhenInUse],
            temporaryUsagePurposeKeys: ["nav-precise"], requireExplicitServiceSession: true, backgroundLocationMode: true)
        var recorded: [EventSubmission] = []
        recorded.append(try recorder.launched(context: context))
        recorded.append(try recorder.appState(.foreground))
        recorded.append(try recorder.sessionStarted("nav", requirement: .always))
        recorded.append(try recorder.diagnostic(.serviceSession, session: "nav", flags: [.authorizationRequestInProgress]))
        recorded.append(try recorder.sessionStarted("precise", requirement: .whenInUse, fullAccuracyPurposeKey: "nav-precise"))
        // A session key and a flag that a live update does not have: the recorder leaves both
        // out, so the server takes the rest instead of refusing the event.
        let stationary = try recorder.diagnostic(.liveUpdates, session: "nav", flags: [.stationary, .fullAccuracyDenied])
        #expect(stationary.event == .diagnosticObserved(Diagnostic(source: .liveUpdates, flags: [.stationary])))
        recorded.append(stationary)
        recorded.append(try recorder.sessionInvalidated("precise"))
        recorded.append(try recorder.backgroundActivity(active: true))
        #expect(queue.count == 8)

        let baseURL = try #require(URL(string: "http://127.0.0.1:\(port)"))
        let sender = EventSender(queue: queue, transport: URLSessionEventTransport(baseURL: baseURL, ingestKey: ingestKey, timeout: 5))
        let flushing = Task { try await sender.flush() }
        // A deadline, not a wait: a flush that never ends is cancelled, so the test fails
        // instead of hanging (the watchdog is cancelled as soon as the test is done).
        let watchdog = Task {
            try await Task.sleep(for: .seconds(90))
            flushing.cancel()
        }
        defer {
            watchdog.cancel()
            flushing.cancel()
        }
        let summary = try await flushing.value
        #expect(summary.delivered == 8 && summary.duplicates == 0 && summary.rejected == 0, "\(summary)")
        #expect(queue.isEmpty)

        // History: each event stored once, versions 1-8 in recording order, with V1-V5's effects.
        let path = "/v1/users/user-1/devices/iphone-1"
        let history = try await waitFor("the server's history of the 8 events") { () async throws -> [[String: Any]]? in
            let (status, page) = try await LocgateServer.request("GET", port, "\(path)/history", key: adminKey)
            let entries = page["entries"] as? [[String: Any]] ?? []
            return status == 200 && entries.count == 8 ? entries : nil
        }
        #expect(history.compactMap { $0["version"] as? Int } == Array(1...8))
        #expect(history.compactMap { $0["id"] as? String } == recorded.map { $0.id.uuidString.lowercased() })
        #expect(
            history.compactMap { $0["type"] as? String } == [
                "contextReported", "appStateChanged", "serviceSessionChanged", "diagnosticObserved",
                "serviceSessionChanged", "diagnosticObserved", "serviceSessionChanged", "backgroundActivityChanged",
            ])
        let expectedEffects: [[String]] = [
            [],
            [],
            // V1: started in use, so active; V2: Core Location asks When In Use first.
            ["sessionChanged nav active", "promptShown whenInUse"],
            // V4: a request in progress answers nothing and changes nothing.
            ["noEffect confirmed"],
            // Active at once; no second prompt while one is pending.
            ["sessionChanged precise active"],
            // V4: stationary describes delivery, not authorization.
            ["noEffect deliveryOnly"],
            ["sessionChanged precise inactive"],
            // V5: started in the foreground with the background mode declared.
            [],
        ]
        #expect(history.map(Self.effects) == expectedEffects)
        let stored = try #require(history[5]["data"] as? [String: Any])
        #expect(stored["source"] as? String == "liveUpdates" && stored["flags"] as? [String] == ["stationary"])
        #expect(stored["session"] == nil)

        // The state: the always session held and active, the layered one gone, the background
        // activity held, the prompt the session brought pending.
        let (status, view) = try await LocgateServer.request("GET", port, "\(path)/state", key: adminKey)
        #expect(status == 200)
        #expect(view["version"] as? Int == 8)
        let state = try #require(view["state"] as? [String: Any])
        let sessions = try #require(state["sessions"] as? [String: Any])
        #expect(Set(sessions.keys) == ["nav"], "the invalidated session is no longer held")
        let nav = try #require(sessions["nav"] as? [String: Any])
        #expect(nav["requirement"] as? String == "always")
        #expect(nav["active"] as? Bool == true)
        #expect(nav["resumable"] as? Bool == false)
        #expect(nav["fullAccuracyPurposeKey"] is NSNull)
        #expect(state["backgroundActivity"] as? Bool == true)
        #expect(state["backgroundActivityResumable"] as? Bool == false)
        #expect(state["inUse"] as? Bool == true)
        #expect(state["pendingPrompt"] as? String == "whenInUse")
        #expect(state["status"] as? String == "notDetermined")
        let reported = try #require(state["context"] as? [String: Any])
        #expect(reported["requireExplicitServiceSession"] as? Bool == true)
        #expect(reported["backgroundLocationMode"] as? Bool == true)
    }

    /// A history entry's effects, one line each: the kind, then its prompt, reason and session,
    /// and whether the session is active.
    static func effects(_ entry: [String: Any]) -> [String] {
        (entry["effects"] as? [[String: Any]] ?? []).map { effect in
            var words = [effect["kind"] as? String ?? "?"]
            for field in ["prompt", "reason", "session"] {
                if let value = effect[field] as? String { words.append(value) }
            }
            if let active = effect["active"] as? Bool { words.append(active ? "active" : "inactive") }
            return words.joined(separator: " ")
        }
    }
}
