import EventLog
import Foundation
import LocationAuthorization
import PostgresClient
import Synchronization

/// The device projection, run inside the append transaction (SPEC §2, §3): loads each stream's
/// state from `device_states`, applies the batch's events with the reducer, writes the new
/// states back, moves the devices between the maintained counts (`device_counts`), and returns
/// each event's outcome to be stored with it (what analytics count included: the rollup adds
/// it up later, off the append path, `AnalyticsRollup`). A rule rejection throws and rolls the
/// whole batch back.
final class DeviceProjector: AppendProjector {
    /// The decoded events in batch order (a batch index is a position here); the log only
    /// carries their JSON.
    private let events: [LocationEvent]
    private let projected: Mutex<(states: [(StreamKey, Int64, DeviceState)], outcomes: [EventOutcome?])>

    init(events: [LocationEvent]) {
        self.events = events
        projected = Mutex(([], []))
    }

    /// The states the append wrote, for the cache once it has committed.
    var states: [(StreamKey, Int64, DeviceState)] { projected.withLock { $0.states } }

    /// The outcome of each event by batch index (nil for a duplicate), so that the answer to the
    /// request need not read back the JSON it stored; one per event, all nil when `project` did
    /// not run (a batch of duplicates only).
    var outcomes: [EventOutcome?] {
        projected.withLock { $0.outcomes.isEmpty ? Array(repeating: nil, count: events.count) : $0.outcomes }
    }

    /// The batch's devices as the projection holds them, read with the log's own reads. An
    /// attempt of the append starts here: what an earlier attempt projected was rolled back, and
    /// an attempt that finds every event stored (a retry raced) projects nothing.
    func read(_ streams: [StreamKey]) -> PostgresQuery? {
        projected.withLock { $0 = ([], []) }
        guard let appID = streams.first?.appID else { return nil }
        return DeviceStateStore.loadQuery(appID: appID, keys: streams)
    }

    func project(_ appends: [StreamAppend], read: PostgresRows?, on connection: PostgresConnection) throws -> [[String?]] {
        guard let appID = appends.first?.stream.appID else { return [] }
        let current: [StreamKey: DeviceStateStore.Row]
        if let read {
            current = try DeviceStateStore.rows(appID: appID, read)
        } else {
            current = try DeviceStateStore.load(appID: appID, keys: appends.map(\.stream), on: connection)
        }
        var outcomes: [[String?]] = []
        var written: [DeviceStateStore.Row] = []
        // By batch index, as arrays rather than dictionaries keyed by it: no hashing per event.
        var outcomesByIndex = [EventOutcome?](repeating: nil, count: events.count)
        for append in appends {
            var device = current[append.stream] ?? DeviceStateStore.Row(key: append.stream, version: 0, state: DeviceState(), milestones: [])
            var streamOutcomes: [String?] = []
            for planned in append.events {
                guard events.indices.contains(planned.index) else {
                    throw ServiceError(.invalidRequest, "event \(planned.index) was not decoded", index: planned.index)
                }
                let outcome: EventOutcome
                do {
                    outcome = try Self.apply(events[planned.index], to: &device)
                } catch {
                    throw EventLogError.rejected(index: planned.index, reason: error)
                }
                streamOutcomes.append(outcome.storedJSON)
                outcomesByIndex[planned.index] = outcome
            }
            device.version = append.events.last?.version ?? append.previousVersion
            written.append(device)
            outcomes.append(streamOutcomes)
        }
        // Each new state's stored form is made once, for its row and its count.
        let texts = written.map(\.state.storedJSON)
        // A device the read found no row for is inserted without `ON CONFLICT` (`save`).
        try DeviceStateStore.save(appID: appID, written, texts: texts, absent: written.map { current[$0.key] == nil }, on: connection)
        try DeviceStateStore.count(appID: appID, written, texts: texts, replacing: current, on: connection)
        projected.withLock { $0 = (written.map { ($0.key, $0.version, $0.state) }, outcomesByIndex) }
        return outcomes
    }
}

extension DeviceProjector {
    /// Applies one event to a device: the reducer, then the analytics of the transition. The
    /// replay uses the same function, so a rebuild computes exactly what appends computed.
    static func apply(_ event: LocationEvent, to device: inout DeviceStateStore.Row) throws(AuthorizationRejection) -> EventOutcome {
        let before = device.state
        let effects = try device.state.apply(event)
        let reached = DeviceMilestones.reached(before: before, after: device.state, effects: effects)
        let new = reached.subtracting(device.milestones)
        device.milestones.formUnion(reached)
        let analytics = EventAnalytics.make(event: event, before: before, after: device.state, effects: effects, newMilestones: new)
        return EventOutcome(effects: effects, before: before.summary, after: device.state.summary, analytics: analytics)
    }
}
