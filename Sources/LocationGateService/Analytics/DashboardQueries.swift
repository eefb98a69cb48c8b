import EventLog
import Foundation
import LocationAuthorization
import PostgresClient

/// Per feature: how many of the app's devices have it enabled now, and why the others do not.
public struct FeatureCoverage: Sendable {
    public var feature: Feature
    public var devices: Int64
    public var enabled: Int64
    /// Reasons and actions of the devices without it, most frequent first.
    public var reasons: [(GateReason, Int64)]
    public var actions: [(GateAction, Int64)]
}

/// A device's history with each feature's decision after every event (the dashboard's device
/// page).
public struct DeviceTimeline: Sendable {
    public struct Step: Sendable {
        public var entry: HistoryPage.Entry
        public var decisions: [GateDecision]
    }

    public var steps: [Step]
    /// True when the stream has more events than the timeline shows.
    public var truncated: Bool
}

extension GateService {
    /// Coverage of every feature of the app, from the projection. Devices in the same state
    /// are decided once: `device_counts` holds a row per distinct state (and lane), so the cost
    /// grows with the app's distinct states (13,337 at 10 million events), not with its
    /// devices; each state is read from `device_state_kinds` and decoded once per process.
    public func featureCoverage(appID: UUID) async throws(ServiceError) -> [FeatureCoverage] {
        let features = try await catalog(appID)
        let stateKinds = self.stateKinds
        let groups = try await database {
            try await reads.caughtUp().withConnection { connection in
                let counts = try connection.query(
                    "SELECT state_id, sum(devices)::bigint FROM device_counts WHERE app_id = \(appID) GROUP BY 1 HAVING sum(devices) <> 0")
                    .map { row -> (Int64, Int64) in (try row.decode(0), try row.decode(1)) }
                let missing = counts.map(\.0).filter { stateKinds.state($0) == nil }
                for chunk in missing.chunks(of: 5000) {
                    for row in try connection.query(
                        "SELECT state_id, state::text FROM device_state_kinds WHERE state_id = ANY(\(PostgresArray(Array(chunk))))") {
                        if let state = try? JSONText.state(try row.decode(1)) { stateKinds.insert(try row.decode(0), state) }
                    }
                }
                return counts.compactMap { id, count in stateKinds.state(id).map { ($0, count) } }
            }
        }
        var coverage = features.map { FeatureCoverage(feature: $0, devices: 0, enabled: 0, reasons: [], actions: []) }
        var reasons = [[GateReason: Int64]](repeating: [:], count: features.count)
        var actions = [[GateAction: Int64]](repeating: [:], count: features.count)
        for (state, count) in groups {
            for (index, feature) in features.enumerated() {
                let decision = state.decide(feature, version: 1)
                coverage[index].devices += count
                if decision.enabled {
                    coverage[index].enabled += count
                } else {
                    reasons[index][decision.reason, default: 0] += count
                    actions[index][decision.action, default: 0] += count
                }
            }
        }
        for index in coverage.indices {
            coverage[index].reasons = reasons[index].sorted { ($0.value, $1.key.rawValue) > ($1.value, $0.key.rawValue) }.map { ($0.key, $0.value) }
            coverage[index].actions = actions[index].sorted { ($0.value, $1.key.rawValue) > ($1.value, $0.key.rawValue) }.map { ($0.key, $0.value) }
        }
        return coverage
    }

    /// Decisions one device page computes at most (events × features).
    public static let maxTimelineDecisions = 100_000

    /// The first `limit` events of a device with their effects and each feature's decision
    /// after each of them (the reducer run again over the stored events, as `state?version=`).
    /// At most `maxTimelineDecisions` decisions in all: a large catalog shows fewer events.
    public func timeline(_ key: StreamKey, limit: Int = 1000) async throws(ServiceError) -> DeviceTimeline {
        let features = try await catalog(key.appID)
        let limit = max(1, min(limit, Self.maxTimelineDecisions / max(1, features.count)))
        let page = try await history(key, afterVersion: 0, limit: limit)
        let events = try await database { try await auditStore.events(key, afterVersion: 0, limit: limit) }
        var state = DeviceState()
        var steps: [DeviceTimeline.Step] = []
        for (entry, recorded) in zip(page.entries, events) {
            if let event = Self.decode(recorded) { _ = try? state.apply(event) }
            steps.append(DeviceTimeline.Step(entry: entry, decisions: features.map { state.decide($0, version: entry.version) }))
        }
        return DeviceTimeline(steps: steps, truncated: page.nextAfterVersion != nil)
    }
}
