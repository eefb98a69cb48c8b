import PostgresClient

/// The log's partitions (migration 008): ranges of `position`, created ahead of the sequence by
/// a database function that the service role may call but not change.
extension EventLog {
    /// One partition of `events`: the positions `[low, high)` it holds.
    public struct Partition: Sendable, Hashable {
        public var name: String
        public var low: Int64
        public var high: Int64
    }

    /// Creates partitions until a whole empty one lies ahead of the position sequence; returns
    /// the names of those it created (usually none). Safe to call from every server at once.
    @discardableResult
    public static func ensurePartitions(on connection: PostgresConnection) throws -> [String] {
        try connection.query("SELECT locgate_ensure_event_partitions()").map { try $0.decode(0) }
    }

    @discardableResult
    public func ensurePartitions() async throws -> [String] {
        try await pool.withConnection { connection in try Self.ensurePartitions(on: connection) }
    }

    /// The partitions in position order.
    public static func partitions(on connection: PostgresConnection) throws -> [Partition] {
        try connection.query(
            """
            SELECT c.relname::text, b[1]::bigint, b[2]::bigint
            FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid,
                 regexp_match(pg_get_expr(c.relpartbound, c.oid), 'FROM \\(''?(\\d+)''?\\) TO \\(''?(\\d+)''?\\)') AS b
            WHERE i.inhparent = 'events'::regclass
            ORDER BY 2
            """
        ).map { Partition(name: try $0.decode(0), low: try $0.decode(1), high: try $0.decode(2)) }
    }
}

extension PostgresError {
    /// An insert may have met a position that no partition holds yet: a check violation
    /// (23514) that names no constraint, as PostgreSQL's "no partition of relation found for
    /// row" does (a CHECK constraint's violation names it). Told apart by the error's fields,
    /// never its message text, which depends on the server's language. Creating the partitions
    /// and appending again succeeds; a caller tries again a bounded number of times.
    public var isMissingPartition: Bool {
        sqlState == "23514" && (constraint ?? "").isEmpty
    }

    /// An append raced another writer to a row its reads had found absent. An append inserts
    /// what its reads (under the streams' locks) found missing: the events (a concurrent retry
    /// may store the same id first, in another partition) and, without `ON CONFLICT`, the
    /// stream heads and a projection's rows (a projection's rebuild may write one meanwhile).
    /// Any unique violation is such a race; appending again reads what is stored.
    public var isAppendRace: Bool { isUniqueViolation }
}
