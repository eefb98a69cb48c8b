import EventLog
import Foundation
import LocationAuthorization
import LocationGateJSON
import Logging
import Metrics
import PostgresClient

/// The audit (SPEC §5, §7): a device's history, its state as of a time or a version, its
/// timeline of decisions (`DashboardQueries.swift`), and the replay of the whole log, all read
/// from the log (the standby when one is configured). The HTTP layer sees it as
/// `HistoryReading`.
public final class AuditCapability: Sendable, DatabaseCalls {
    let pool: PostgresConnectionPool
    /// Streams and archive snapshots (the standby when configured).
    let auditStore: AuditStore
    let reads: StandbyReads
    let features: FeatureCatalog

    init(pool: PostgresConnectionPool, auditStore: AuditStore, reads: StandbyReads, features: FeatureCatalog) {
        self.pool = pool
        self.auditStore = auditStore
        self.reads = reads
        self.features = features
    }

    /// The audit replay over this service's database (and standby, when configured).
    public func replay(appID: UUID?, logger: Logger) -> Replay {
        Replay(pool: pool, readPool: reads.standby, appID: appID, logger: logger)
    }

    /// Events read per page when a state is folded from the log.
    static let foldPage = 1000

    /// The state after `version` events, or after the longest prefix whose events all occurred
    /// at or before `asOf` (SPEC §5). When the stream's first events were archived, the
    /// computation starts from its state at the archive boundary, and a version or time before
    /// it is not found (it lies in the archive file). The events are read a page at a time and
    /// folded as they come, and reading stops at the cut: memory does not grow with the
    /// stream, and a state early in a long stream reads only its prefix.
    public func state(_ key: StreamKey, asOf: Date?, version: Int64?) async throws(ServiceError) -> StateView {
        var attempt = 0
        while true {
            attempt += 1
            let archived = try await database { try await auditStore.archivedSnapshot(key) }
            if let archived {
                if let version, version < archived.version {
                    throw ServiceError(.notFound, "versions 1-\(archived.version) of the stream are no longer in the log (archived, or past the app's retention): the earliest state kept is at version \(archived.version)")
                }
                if let asOf, asOf < archived.lastOccurredAt {
                    throw ServiceError(.notFound, "the stream's events before \(RFC3339.string(from: archived.lastOccurredAt)) are no longer in the log (archived, or past the app's retention)")
                }
            }
            let first = archived?.version ?? 0
            var state = archived?.state ?? DeviceState()
            var reached = first
            var after = first
            var cut = false
            var raced = false
            fold: while true {
                let page = try await database { try await auditStore.events(key, afterVersion: after, limit: Self.foldPage) }
                // An archive that committed between the two reads: the events do not start
                // right after the snapshot. Read both again.
                if after == first, let head = page.first, head.version != first + 1, attempt < 3 {
                    raced = true
                    break fold
                }
                for recorded in page {
                    if let version, recorded.version > version { cut = true; break fold }
                    if let asOf, recorded.occurredAt > asOf { cut = true; break fold }
                    guard let event = Self.decode(recorded) else {
                        throw ServiceError(.internalError, "event \(recorded.version) of the stream could not be read")
                    }
                    _ = try? state.apply(event)
                    reached = recorded.version
                }
                guard page.count == Self.foldPage, let last = page.last else { break }
                after = last.version
            }
            if raced { continue }
            if let version, !cut, version > reached {
                throw ServiceError(.notFound, "the stream has \(reached) events, not \(version)")
            }
            let features = try await self.features.catalog(key.appID)
            return StateView(version: reached, state: state, decisions: features.map { state.decide($0, version: reached) })
        }
    }

    /// History, paged by version (SPEC §5): `limit` 100 by default, 1,000 at most.
    public func history(_ key: StreamKey, afterVersion: Int64, limit: Int) async throws(ServiceError) -> HistoryPage {
        let events = try await database { try await auditStore.events(key, afterVersion: afterVersion, limit: limit + 1) }
        let page = events.prefix(limit)
        let entries = try page.map { recorded throws(ServiceError) -> HistoryPage.Entry in try HistoryPage.Entry(recorded) }
        return HistoryPage(entries: entries, nextAfterVersion: events.count > limit ? page.last?.version : nil)
    }

    /// The domain event of a stored one.
    static func decode(_ recorded: RecordedEvent) -> LocationEvent? {
        try? JSONText.event(type: recorded.type, data: recorded.data)
    }
}
