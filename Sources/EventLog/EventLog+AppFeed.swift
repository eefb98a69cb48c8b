import Foundation
import PostgresClient

/// One app's events in global order, for its change feed (`GET /v1/changes`).
extension EventLog {
    /// The app's next events after `position` in global order, at most `limit`, read below the
    /// oldest running transaction as `read(after:)` is, so a feed never skips a late commit.
    public func read(appID: UUID, after position: LogPosition, limit: Int) async throws -> [RecordedEvent] {
        try await pool.withConnection { connection in
            try Self.decode(connection.query(
                """
                SELECT \(unescaped: Self.columns) FROM events
                WHERE (tx_id, position) > (\(String(position.transactionID))::xid8, \(position.position))
                  AND tx_id < pg_snapshot_xmin(pg_current_snapshot())
                  AND app_id = \(appID)
                ORDER BY events.tx_id, events.position
                LIMIT \(limit)
                """))
        }
    }

    /// The position of the newest event readable in global order now: a feed that starts
    /// here sees every event committed later, and none before. One backward index probe.
    public func head() async throws -> LogPosition {
        try await pool.withConnection { connection in
            let rows = try connection.query(
                """
                SELECT tx_id::text, position FROM events
                WHERE tx_id < pg_snapshot_xmin(pg_current_snapshot())
                ORDER BY events.tx_id DESC, events.position DESC LIMIT 1
                """)
            guard let row = rows.first else { return .start }
            return LogPosition(transactionID: try row.decode(0), position: try row.decode(1))
        }
    }
}

extension LogPosition {
    /// The text form used as an SSE event id: `<transaction>.<position>`.
    public var eventID: String { "\(transactionID).\(position)" }

    /// Parses `eventID`; nil for anything else.
    public init?(eventID text: String) {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, parts.allSatisfy({ (1...20).contains($0.count) && $0.allSatisfy(\.isASCII) }),
              let transaction = UInt64(parts[0]), let position = Int64(parts[1]), position >= 0
        else { return nil }
        self.init(transactionID: transaction, position: position)
    }
}
