import EventLog
import Foundation
import LocationAuthorization
import Logging
import PostgresClient

/// What history and state-as-of read: a stream's events and its snapshot at the archive
/// boundary, from the standby when one is configured (these reads may lag), else, or when it
/// cannot answer, from the primary.
struct AuditStore: Sendable {
    let reads: StandbyReads
    /// The log on the primary and on `reads`' pool.
    let primaryLog: EventLog
    let readLog: EventLog

    init(reads: StandbyReads, logger: Logger) {
        self.reads = reads
        self.primaryLog = EventLog(pool: reads.primary, logger: logger)
        self.readLog = EventLog(pool: reads.pool, logger: logger)
    }

    /// A page of a stream's events after `afterVersion`, in version order.
    func events(_ key: StreamKey, afterVersion: Int64, limit: Int) async throws -> [RecordedEvent] {
        try await reads.read { onStandby in
            try await (onStandby ? readLog : primaryLog).readStream(key, afterVersion: afterVersion, limit: limit)
        }
    }

    /// The stream's state at the archive boundary; nil when none of its events was archived.
    func archivedSnapshot(_ key: StreamKey) async throws -> (version: Int64, state: DeviceState, lastOccurredAt: Date)? {
        try await reads.read { onStandby in
            try await (onStandby ? reads.pool : reads.primary).withConnection { try ArchiveSnapshot.stream(key, on: $0) }
        }
    }
}
