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

extension AnalyticsCapability {
    /// Coverage of every feature of the app, from the projection. Devices in the same state
    /// are decided once: `device_counts` holds a row per distinct state (and lane), so the cost
    /// grows with the app's distinct states (13,337 at 10 million events), not with its
    /// devices; the states are read a page at a time (`StateKindScan`) and decided as they come,
    /// so memory holds the counts per feature, never every state.
    public func featureCoverage(appID: UUID, cancellation: CancellationFlag = CancellationFlag()) async throws(ServiceError) -> [FeatureCoverage] {
        let features = try await self.features.catalog(appID)
        let stateKinds = self.stateKinds
        let reads = self.reads
        struct Verdict {
            var enabled: Bool
            var reason: GateReason
            var action: GateAction
        }
        struct Counts: Sendable {
            var devices: [Int64]
            var enabled: [Int64]
            var reasons: [[GateReason: Int64]]
            var actions: [[GateAction: Int64]]
        }
        let counts = try await database {
            try await withTaskCancellationHandler {
                try await reads.caughtUp().transaction { connection -> Counts in
                    try connection.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                    var counts = Counts(
                        devices: Array(repeating: 0, count: features.count), enabled: Array(repeating: 0, count: features.count),
                        reasons: Array(repeating: [:], count: features.count), actions: Array(repeating: [:], count: features.count))
                    // Each form is decided once per floor met; what is kept of it is each feature's verdict.
                    var decisions = FormDecisions<[Verdict]>(features: features, maxEntries: max(16, 2_000_000 / max(1, features.count))) { _, decide in
                        features.indices.map { index in
                            let decision = decide(index)
                            return Verdict(enabled: decision.enabled, reason: decision.reason, action: decision.action)
                        }
                    }
                    let scan = StateKindScan(appID: appID, stateKinds: stateKinds, cancellation: cancellation)
                    try scan.forEach(on: connection) { kind in
                        guard let verdicts = decisions.value(for: kind, form: { scan.form(of: $0, on: connection) }) else { return }
                        for (index, verdict) in verdicts.enumerated() {
                            counts.devices[index] += kind.devices
                            if verdict.enabled {
                                counts.enabled[index] += kind.devices
                            } else {
                                counts.reasons[index][verdict.reason, default: 0] += kind.devices
                                counts.actions[index][verdict.action, default: 0] += kind.devices
                            }
                        }
                    }
                    return counts
                }
            } onCancel: {
                cancellation.cancel()
            }
        }
        return features.indices.map { index in
            FeatureCoverage(
                feature: features[index], devices: counts.devices[index], enabled: counts.enabled[index],
                reasons: counts.reasons[index].filter { $0.value != 0 }.sorted { ($0.value, $1.key.rawValue) > ($1.value, $0.key.rawValue) }.map { ($0.key, $0.value) },
                actions: counts.actions[index].filter { $0.value != 0 }.sorted { ($0.value, $1.key.rawValue) > ($1.value, $0.key.rawValue) }.map { ($0.key, $0.value) })
        }
    }

}

extension AuditCapability {
    /// Decisions one device page computes at most (events × features).
    public static let maxTimelineDecisions = 100_000

    /// The first `limit` events of a device with their effects and each feature's decision
    /// after each of them (the reducer run again over the stored events, as `state?version=`).
    /// At most `maxTimelineDecisions` decisions in all: a large catalog shows fewer events.
    public func timeline(_ key: StreamKey, limit: Int = 1000) async throws(ServiceError) -> DeviceTimeline {
        let features = try await self.features.catalog(key.appID)
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
