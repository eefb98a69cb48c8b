/// How to reach the database: a libpq connection string or URI (`LOCGATE_DATABASE_URL`), plus
/// keyword overrides passed separately to `PQconnectdbParams`, so that no value is ever
/// interpolated into a connection string.
public struct PostgresConfiguration: Sendable, Hashable {
    /// A libpq connection string (`host=... dbname=...`) or URI (`postgresql://...`).
    public var connectionString: String
    /// Keywords that override what the connection string says, such as `dbname` or `user`.
    public var overrides: [String: String]
    /// Reported in `pg_stat_activity`.
    public var applicationName: String

    public init(connectionString: String, overrides: [String: String] = [:], applicationName: String = "locgate") {
        self.connectionString = connectionString
        self.overrides = overrides
        self.applicationName = applicationName
    }

    /// The configuration with PostgreSQL's `statement_timeout` on every session, set through
    /// libpq's `options` (replacing any `options` the connection string had): a statement that
    /// runs longer is cancelled with SQLSTATE 57014.
    public func withStatementTimeout(_ timeout: Duration) -> PostgresConfiguration {
        let milliseconds = max(1, timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        return with("options", "-c statement_timeout=\(milliseconds)")
    }

    /// The same server with another database or user.
    public func with(_ keyword: String, _ value: String) -> PostgresConfiguration {
        var copy = self
        copy.overrides[keyword] = value
        return copy
    }

    /// Keyword/value pairs in the order `PQconnectdbParams` needs: the expanded connection string
    /// first, then overrides, which win because libpq keeps the last value of a keyword.
    ///
    /// Timeouts and TCP keepalives come before the connection string, which may override them:
    /// a server that vanished without closing its sockets (a failover, a firewall dropping idle
    /// connections) is noticed within seconds instead of the kernel's two hours.
    var keywordsAndValues: [(String, String)] {
        var pairs: [(String, String)] = Self.resilienceDefaults
        pairs += [("dbname", connectionString), ("application_name", applicationName)]
        pairs.append(contentsOf: overrides.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })
        return pairs
    }

    /// Seconds to wait for a connection, and TCP keepalives (every 2 s after 5 s idle, dead
    /// after 3 unanswered) with a 10 s limit on unacknowledged writes.
    static let resilienceDefaults: [(String, String)] = [
        ("connect_timeout", "5"), ("keepalives", "1"), ("keepalives_idle", "5"),
        ("keepalives_interval", "2"), ("keepalives_count", "3"), ("tcp_user_timeout", "10000"),
    ]
}
