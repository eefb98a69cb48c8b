import EventLog
import Foundation
import LocationAuthorization
import LocationGateService
import LocationGateSimulation
import LocationGateTestSupport
import PostgresClient
import Testing

/// `GateService.previewFeature` (SPEC §15) against a real database: counts, order, samples, the
/// unknown-feature case, agreement with every device decided on its own, and that a preview
/// changes nothing.
@Suite("Feature preview: what a PUT would change, from the maintained counts", .timeLimit(.minutes(3)))
struct FeaturePreviewTests {
    static let nearby = Feature(key: "nearby", requires: .whenInUse, services: [.standard])
    static let at = Date(timeIntervalSince1970: 1_795_341_600)

    static func submission(_ user: String, _ device: String, _ event: LocationEvent) -> EventSubmission {
        EventSubmission(id: UUID(), userId: user, deviceId: device, occurredAt: at, event: event)
    }

    /// 30 iOS devices on 5.2.1-beta and When In Use (`a-*`), 25 iOS devices on 5.1 and When In
    /// Use with Precise Location off (`b-*`), 5 Android devices on 5.3 with precise location
    /// (`c-*`), 3 devices that never reported a context (`d-*`, notDetermined).
    static func population(_ service: GateService, _ appID: UUID) async throws {
        var events: [EventSubmission] = []
        for index in 0..<30 {
            events.append(submission("ua-\(index)", "a-\(index)", .contextReported(DeviceContext(platform: .iOS, appVersion: "5.2.1-beta"))))
            events.append(submission("ua-\(index)", "a-\(index)", .settingsChanged(authorization: .whileUsing, preciseLocation: nil)))
        }
        for index in 0..<25 {
            events.append(submission("ub-\(index)", "b-\(index)", .contextReported(DeviceContext(platform: .iOS, appVersion: "5.1"))))
            events.append(submission("ub-\(index)", "b-\(index)", .settingsChanged(authorization: .whileUsing, preciseLocation: false)))
        }
        for index in 0..<5 {
            events.append(submission("uc-\(index)", "c-\(index)", .contextReported(
                DeviceContext(platform: .android, appVersion: "5.3", apiLevel: 34, targetSdk: 34))))
            events.append(submission("uc-\(index)", "c-\(index)", .permissionsObserved(granted: [.coarse, .fine], locationEnabled: true)))
        }
        for index in 0..<3 {
            events.append(submission("ud-\(index)", "d-\(index)", .locationServicesChanged(enabled: true)))
        }
        for chunk in stride(from: 0, to: events.count, by: 40) {
            _ = try await service.events.ingest(appID: appID, submissions: Array(events[chunk..<min(chunk + 40, events.count)]))
        }
    }

    static func with(
        _ feature: Feature, disabled: Bool = false, floor: String? = nil, accuracy: AccuracyNeed? = nil
    ) -> Feature {
        var feature = feature
        feature.disabled = disabled
        feature.minAppVersion = floor.flatMap(AppVersion.init)
        if let accuracy { feature.accuracy = accuracy }
        return feature
    }

    static func outcome(_ enabled: Bool, _ reason: String) -> FeaturePreview.Outcome {
        FeaturePreview.Outcome(enabled: enabled, reason: reason)
    }

    /// Every sample is a device of the group whose id starts with one of `prefixes`, named once.
    static func expectSample(_ change: FeaturePreview.Change, count: Int, prefixes: [String], sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(change.sample.count == count, sourceLocation: sourceLocation)
        #expect(Set(change.sample).count == change.sample.count, sourceLocation: sourceLocation)
        for device in change.sample {
            #expect(prefixes.contains { device.deviceId.hasPrefix($0) && device.userId.hasPrefix("u" + $0) }, "\(device)", sourceLocation: sourceLocation)
        }
        #expect(change.sample == change.sample.sorted { ($0.userId, $0.deviceId) < ($1.userId, $1.deviceId) }, sourceLocation: sourceLocation)
    }

    /// What a preview must leave as it was: the catalog, the devices, their counts.
    static func fingerprint(_ pool: PostgresConnectionPool, _ appID: UUID) async throws -> [String] {
        let queries: [PostgresQuery] = [
            "SELECT coalesce(md5(string_agg(key || definition::text || updated_at::text, ',' ORDER BY key)), '') FROM features WHERE app_id = \(appID)",
            """
            SELECT coalesce(md5(string_agg(user_id || '/' || device_id || version::text || state::text || updated_at::text, ',' ORDER BY user_id, device_id)), '')
            FROM device_states WHERE app_id = \(appID)
            """,
            "SELECT coalesce(md5(string_agg(state_id::text || '=' || devices::text, ',' ORDER BY lane, state_id)), '') FROM device_counts WHERE app_id = \(appID)",
        ]
        var prints: [String] = []
        for query in queries { prints.append(try await pool.query(query).first?.decode(0, as: String.self) ?? "") }
        return prints
    }

    @Test("Counts by pair, largest first, by platform, with samples of the pair's own devices; a version floor, accuracy full, the kill switch")
    func countsOrderSamples() async throws {
        let pool = try await TestDatabase.pool(size: 2)
        let service = GateService(pool: pool, logger: TestDatabase.logger)
        let appID = try await TestDatabase.makeApp(pool)
        _ = try await service.catalog.putFeature(appID: appID, feature: Self.nearby, actor: .cli)
        try await Self.population(service, appID)
        let before = try await Self.fingerprint(pool, appID)

        // minAppVersion 5.2: 5.1 (b) and no version at all (d) are too old; 5.2.1-beta (a) and
        // 5.3 (c) are not. b (25 devices) is sampled by its own query, d (3) by the cursor.
        let floor = try await service.catalog.previewFeature(appID: appID, feature: Self.with(Self.nearby, floor: "5.2"))
        #expect(floor.devices == 63)
        #expect(floor.changes.map(\.devices) == [25, 3])
        #expect(floor.changes.first?.from == Self.outcome(true, "authorized"))
        #expect(floor.changes.first?.to == Self.outcome(false, "appVersionTooOld"))
        #expect(floor.changes.first?.byPlatform == ["iOS": 25])
        #expect(floor.changes.last?.from == Self.outcome(false, "notDetermined"))
        #expect(floor.changes.last?.to == Self.outcome(false, "appVersionTooOld"))
        #expect(floor.changes.last?.byPlatform == ["iOS": 3], "a device that never reported a platform is iOS")
        if floor.changes.count == 2 {
            Self.expectSample(floor.changes[0], count: 20, prefixes: ["b-"])
            Self.expectSample(floor.changes[1], count: 3, prefixes: ["d-"])
        }

        // Accuracy full: only the reduced devices (b) change.
        let full = try await service.catalog.previewFeature(appID: appID, feature: Self.with(Self.nearby, accuracy: .full))
        #expect(full.devices == 63)
        #expect(full.changes.count == 1)
        #expect(full.changes.first?.devices == 25 && full.changes.first?.to == Self.outcome(false, "reducedAccuracy"))
        if let change = full.changes.first { Self.expectSample(change, count: 20, prefixes: ["b-"]) }

        // The kill switch: every enabled device of both platforms in one pair, then the others.
        let off = try await service.catalog.previewFeature(appID: appID, feature: Self.with(Self.nearby, disabled: true))
        #expect(off.changes.map(\.devices) == [60, 3])
        #expect(off.changes.first?.from == Self.outcome(true, "authorized"))
        #expect(off.changes.first?.to == Self.outcome(false, "disabledByOperator"))
        #expect(off.changes.first?.byPlatform == ["iOS": 55, "android": 5])
        #expect(off.changes.last?.to == Self.outcome(false, "disabledByOperator"))
        if off.changes.count == 2 {
            Self.expectSample(off.changes[0], count: 20, prefixes: ["a-", "b-", "c-"])
            Self.expectSample(off.changes[1], count: 3, prefixes: ["d-"])
        }

        // The same definition again changes nothing.
        let same = try await service.catalog.previewFeature(appID: appID, feature: Self.nearby)
        #expect(same.devices == 63 && same.changes.isEmpty)

        // Nothing was stored, nothing moved.
        #expect(try await Self.fingerprint(pool, appID) == before)
        #expect(try await service.catalog.listFeatures(appID: appID) == [Self.nearby])
        await pool.close()
    }

    @Test("A new key previews against no feature: unknownFeature to each decision")
    func unknownFeature() async throws {
        let pool = try await TestDatabase.pool(size: 2)
        let service = GateService(pool: pool, logger: TestDatabase.logger)
        let appID = try await TestDatabase.makeApp(pool)
        _ = try await service.catalog.putFeature(appID: appID, feature: Self.nearby, actor: .cli)
        try await Self.population(service, appID)
        let before = try await Self.fingerprint(pool, appID)

        let fresh = Feature(key: "fresh", requires: .whenInUse, services: [.standard], minAppVersion: AppVersion("5.2"))
        let preview = try await service.catalog.previewFeature(appID: appID, feature: fresh)
        #expect(preview.devices == 63)
        #expect(preview.changes.allSatisfy { $0.from == FeaturePreview.Outcome.unknownFeature })
        #expect(preview.changes.map(\.devices) == [35, 28])
        #expect(preview.changes.first?.to == Self.outcome(true, "authorized"))
        #expect(preview.changes.first?.byPlatform == ["iOS": 30, "android": 5])
        #expect(preview.changes.last?.to == Self.outcome(false, "appVersionTooOld"))
        #expect(preview.changes.last?.byPlatform == ["iOS": 28])
        if preview.changes.count == 2 {
            Self.expectSample(preview.changes[0], count: 20, prefixes: ["a-", "c-"])
            Self.expectSample(preview.changes[1], count: 20, prefixes: ["b-", "d-"])
        }
        #expect(try await Self.fingerprint(pool, appID) == before)
        #expect(try await service.catalog.feature(appID: appID, key: "fresh") == nil)

        // An app without devices: no device, no change.
        let empty = try await TestDatabase.makeApp(pool)
        let none = try await service.catalog.previewFeature(appID: empty, feature: fresh)
        #expect(none.devices == 0 && none.changes.isEmpty)
        await pool.close()
    }

    @Test("A simulated population of both platforms: the preview equals every device decided on its own")
    func equalsEveryDeviceDecided() async throws {
        let pool = try await TestDatabase.pool(size: 2)
        let service = GateService(pool: pool, logger: TestDatabase.logger)
        let appID = try await TestDatabase.makeApp(pool)
        let current = [
            Feature(key: "nearby", requires: .whenInUse),
            Feature(key: "trip-log", requires: .always, services: [.visits]),
        ]
        for feature in current { _ = try await service.catalog.putFeature(appID: appID, feature: feature, actor: .cli) }
        let simulator = PopulationSimulator(seed: 11, observationsOnly: true, platform: .mixed)
        for start in stride(from: 0, to: 600, by: 20) {
            _ = try await service.events.ingest(appID: appID, submissions: (start..<(start + 20)).flatMap { simulator.device($0) })
        }
        let rows = try await pool.query("SELECT user_id, device_id, state::text FROM device_states WHERE app_id = \(appID)")
        let devices = try rows.map { row in
            (FeaturePreview.Device(userId: try row.decode(0), deviceId: try row.decode(1)), try DeviceState.decoded(from: try row.decode(2) as String))
        }
        #expect(devices.count == 600)
        let before = try await Self.fingerprint(pool, appID)

        let proposals: [(current: Feature?, proposed: Feature)] = [
            (current[0], Self.with(current[0], floor: "3.1")),
            (current[0], Self.with(current[0], accuracy: .full)),
            (current[0], Self.with(current[0], disabled: true)),
            (current[1], Feature(key: "trip-log", requires: .always, services: [.visits, .regionMonitoring], delivery: .modern)),
            (nil, Feature(key: "geofence", requires: .whenInUse, services: [.regionMonitoring], minAppVersion: AppVersion("4"))),
        ]
        for (old, proposed) in proposals {
            let preview = try await service.catalog.previewFeature(appID: appID, feature: proposed)
            // Every device decided on its own, grouped the same way.
            var expected: [String: (devices: Int64, byPlatform: [String: Int64], members: Set<FeaturePreview.Device>)] = [:]
            for (device, state) in devices {
                let from = old.map { FeaturePreview.Outcome(state.decide($0, version: 0)) } ?? .unknownFeature
                let to = FeaturePreview.Outcome(state.decide(proposed, version: 0))
                guard from != to else { continue }
                let key = "\(from.enabled) \(from.reason) -> \(to.enabled) \(to.reason)"
                var entry = expected[key] ?? (devices: 0, byPlatform: [:], members: [])
                entry.devices += 1
                entry.byPlatform[state.context.effectivePlatform.rawValue, default: 0] += 1
                entry.members.insert(device)
                expected[key] = entry
            }
            #expect(preview.devices == 600, "\(proposed)")
            #expect(preview.changes.count == expected.count, "\(proposed.key): \(preview.changes.map { "\($0.from) -> \($0.to)" })")
            #expect(preview.changes.map(\.devices) == preview.changes.map(\.devices).sorted(by: >), "largest first")
            for change in preview.changes {
                let key = "\(change.from.enabled) \(change.from.reason) -> \(change.to.enabled) \(change.to.reason)"
                let entry = try #require(expected[key], "\(key)")
                #expect(change.devices == entry.devices, "\(key)")
                #expect(change.byPlatform == entry.byPlatform, "\(key)")
                #expect(change.sample.count == min(20, Int(entry.devices)), "\(key)")
                #expect(Set(change.sample).isSubset(of: entry.members), "\(key): a sample of another pair")
                #expect(Set(change.sample).count == change.sample.count, "\(key)")
            }
        }
        #expect(try await Self.fingerprint(pool, appID) == before)
        #expect(try await service.catalog.listFeatures(appID: appID) == current.sorted { $0.key < $1.key })
        await pool.close()
    }
}
