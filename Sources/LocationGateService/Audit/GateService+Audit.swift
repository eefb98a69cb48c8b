import EventLog
import Foundation
import LocationAuthorization
import Logging
import Metrics
import PostgresClient

extension GateService {
    /// A stream's events in version order, all of them.
    func allEvents(_ key: StreamKey) async throws(ServiceError) -> [RecordedEvent] {
        var events: [RecordedEvent] = []
        while true {
            let after = events.last?.version ?? 0
            let page = try await database { try await auditStore.events(key, afterVersion: after, limit: 1000) }
            events += page
            if page.count < 1000 { return events }
        }
    }

    /// The state after `version` events, or after the longest prefix whose events all occurred
    /// at or before `asOf` (SPEC §5). When the stream's first events were archived, the
    /// computation starts from its state at the archive boundary, and a version or time before
    /// it is not found (it lies in the archive file).
    public func state(_ key: StreamKey, asOf: Date?, version: Int64?) async throws(ServiceError) -> StateView {
        var (archived, events) = try await archivedPrefixAndEvents(key)
        let first = archived?.version ?? 0
        if let version, version > first + Int64(events.count) {
            throw ServiceError(.notFound, "the stream has \(first + Int64(events.count)) events, not \(version)")
        }
        if let archived {
            if let version, version < archived.version {
                throw ServiceError(.notFound, "versions 1-\(archived.version) of the stream are archived: the earliest state kept is at version \(archived.version)")
            }
            if let asOf, asOf < archived.lastOccurredAt {
                throw ServiceError(.notFound, "the stream's events before \(RFC3339.string(from: archived.lastOccurredAt)) are archived")
            }
        }
        var state = archived?.state ?? DeviceState()
        var reached = first
        if version == first { events = [] }
        for recorded in events {
            if let version, recorded.version > version { break }
            if let asOf, recorded.occurredAt > asOf { break }
            guard let event = Self.decode(recorded) else {
                throw ServiceError(.internalError, "event \(recorded.version) of the stream could not be read")
            }
            _ = try? state.apply(event)
            reached = recorded.version
        }
        let features = try await catalog(key.appID)
        return StateView(version: reached, state: state, decisions: features.map { state.decide($0, version: reached) })
    }

    /// The stream's state at the archive boundary (nil when none of its events was archived)
    /// and its events after it. Read again when an archive committed between the two reads
    /// (the events then do not start right after the snapshot's version).
    func archivedPrefixAndEvents(
        _ key: StreamKey
    ) async throws(ServiceError) -> ((version: Int64, state: DeviceState, lastOccurredAt: Date)?, [RecordedEvent]) {
        var attempt = 0
        while true {
            attempt += 1
            let archived = try await database { try await auditStore.archivedSnapshot(key) }
            let events = try await allEvents(key)
            let next = (archived?.version ?? 0) + 1
            if events.first.map({ $0.version == next }) ?? true || attempt == 3 { return (archived, events) }
        }
    }

    /// History, paged by version (SPEC §5): `limit` 100 by default, 1,000 at most.
    public func history(_ key: StreamKey, afterVersion: Int64, limit: Int) async throws(ServiceError) -> HistoryPage {
        let events = try await database { try await auditStore.events(key, afterVersion: afterVersion, limit: limit + 1) }
        let page = events.prefix(limit)
        let entries = try page.map { recorded throws(ServiceError) -> HistoryPage.Entry in
            do {
                let outcome = try JSONText.outcome(recorded.outcome ?? "{}")
                return HistoryPage.Entry(
                    version: recorded.version, id: recorded.id.lowercasedText, type: recorded.type,
                    data: try JSONText.decode(JSONValue.self, recorded.data),
                    occurredAt: RFC3339.string(from: recorded.occurredAt), recordedAt: RFC3339.string(from: recorded.recordedAt),
                    effects: outcome.effects, before: outcome.before, after: outcome.after)
            } catch {
                throw ServiceError(.internalError, "event \(recorded.version) of the stream could not be read")
            }
        }
        return HistoryPage(entries: entries, nextAfterVersion: events.count > limit ? page.last?.version : nil)
    }

    /// The domain event of a stored one.
    static func decode(_ recorded: RecordedEvent) -> LocationEvent? {
        try? JSONText.event(type: recorded.type, data: recorded.data)
    }
}
