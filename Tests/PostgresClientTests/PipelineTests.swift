import Foundation
import LocationGateTestSupport
import PostgresClient
import Testing

/// Statements queued with `send(_:)` go with the transaction's next answered statement or its
/// COMMIT, in one pipeline: these check that queueing changes no transaction's outcome.
@Suite("Queued statements in pipelines (real server)", .timeLimit(.minutes(2)))
struct PipelineTests {
    /// A prefix of app names no other test (or run) uses.
    private func uniquePrefix() -> String { "pipe-\(UUID().uuidString.prefix(8))-" }

    private func names(_ pool: PostgresConnectionPool, _ prefix: String) async throws -> [String] {
        try await pool.query("SELECT name FROM apps WHERE name LIKE \(prefix + "%") ORDER BY name").map { try $0.decode(0) }
    }

    @Test("Queued writes commit with COMMIT, in order, and a later read in the transaction sees them")
    func queuedWritesCommit() async throws {
        let pool = try await TestDatabase.pool(size: 1)
        let prefix = uniquePrefix()
        let seen = try await pool.transaction { connection -> Int64 in
            try connection.send("INSERT INTO apps (id, name) VALUES (\(UUID()), \(prefix + "a"))")
            try connection.send("INSERT INTO apps (id, name) VALUES (\(UUID()), \(prefix + "b"))")
            let count: Int64 = try connection.query("SELECT count(*) FROM apps WHERE name LIKE \(prefix + "%")").first?.decode(0) ?? -1
            try connection.send("UPDATE apps SET name = \(prefix + "c") WHERE name = \(prefix + "b")")
            return count
        }
        #expect(seen == 2)
        #expect(try await names(pool, prefix) == [prefix + "a", prefix + "c"])
        await pool.close()
    }

    @Test("Several reads in one round trip answer each in order, after the queued writes; a failing one aborts the transaction")
    func severalReads() async throws {
        let pool = try await TestDatabase.pool(size: 1)
        let prefix = uniquePrefix()
        let answers = try await pool.transaction { connection -> [[String]] in
            try connection.send("INSERT INTO apps (id, name) VALUES (\(UUID()), \(prefix + "a"))")
            let rows = try connection.query([
                "SELECT name FROM apps WHERE name LIKE \(prefix + "%")",
                "SELECT g::text FROM generate_series(1, 3) AS g",
                "SELECT 'x' WHERE false",
            ])
            return try rows.map { try $0.map { try $0.decode(0) } }
        }
        #expect(answers == [[prefix + "a"], ["1", "2", "3"], []])
        await #expect(throws: PostgresError.self) {
            try await pool.transaction { connection in
                try connection.send("INSERT INTO apps (id, name) VALUES (\(UUID()), \(prefix + "b"))")
                _ = try connection.query(["SELECT 1", "SELECT 1 / 0", "SELECT 2"])
            }
        }
        #expect(try await names(pool, prefix) == [prefix + "a"])
        #expect(try await pool.query("SELECT 1").count == 1)
        await pool.close()
    }

    @Test("A body that throws after queueing writes stores none of them, sent or not")
    func throwingBodyStoresNothing() async throws {
        struct Refusal: Error {}
        let pool = try await TestDatabase.pool(size: 1)
        let prefix = uniquePrefix()
        // Nothing reached the server: the queue is dropped.
        await #expect(throws: Refusal.self) {
            try await pool.transaction { connection in
                try connection.send("INSERT INTO apps (id, name) VALUES (\(UUID()), \(prefix + "unsent"))")
                throw Refusal()
            }
        }
        // Part of it reached the server with a read: rolled back.
        await #expect(throws: Refusal.self) {
            try await pool.transaction { connection in
                try connection.send("INSERT INTO apps (id, name) VALUES (\(UUID()), \(prefix + "sent"))")
                _ = try connection.query("SELECT 1")
                try connection.send("INSERT INTO apps (id, name) VALUES (\(UUID()), \(prefix + "queued"))")
                throw Refusal()
            }
        }
        #expect(try await names(pool, prefix).isEmpty)
        // The connection is clean for the next lease.
        #expect(try await pool.query("SELECT 1").count == 1)
        await pool.close()
    }

    @Test("A queued write that fails is thrown at COMMIT with its SQLSTATE, and rolls back the writes before it")
    func failingQueuedWrite() async throws {
        let pool = try await TestDatabase.pool(size: 1)
        let prefix = uniquePrefix()
        let id = UUID()
        do {
            try await pool.transaction { connection in
                try connection.send("INSERT INTO apps (id, name) VALUES (\(UUID()), \(prefix + "first"))")
                try connection.send("INSERT INTO apps (id, name) VALUES (\(id), \(prefix + "x"))")
                try connection.send("INSERT INTO apps (id, name) VALUES (\(id), \(prefix + "y"))")
            }
            Issue.record("expected a unique violation")
        } catch let error as PostgresError {
            #expect(error.isUniqueViolation && error.constraint == "apps_pkey")
        }
        #expect(try await names(pool, prefix).isEmpty)
        // Not broken, and outside any transaction: the same connection (pool of one) writes,
        // and another connection sees it at once.
        try await pool.query("INSERT INTO apps (id, name) VALUES (\(UUID()), \(prefix + "after"))")
        let other = try await TestDatabase.pool(size: 1)
        #expect(try await names(other, prefix) == [prefix + "after"])
        await other.close()
        await pool.close()
    }

    @Test("A queued write that fails is thrown by the next read, which the server skipped")
    func failingWriteBeforeRead() async throws {
        let pool = try await TestDatabase.pool(size: 1)
        let prefix = uniquePrefix()
        await #expect(throws: PostgresError.self) {
            try await pool.transaction { connection in
                try connection.send("INSERT INTO apps (id, name) VALUES (\(UUID()), \(prefix + "a"))")
                try connection.send("INSERT INTO apps (id, name) VALUES (NULL, \(prefix + "b"))")
                _ = try connection.query("SELECT 1")
                Issue.record("the read ran after a failed write")
            }
        }
        #expect(try await names(pool, prefix).isEmpty)
        #expect(try await pool.query("SELECT 1").count == 1)
        await pool.close()
    }

    @Test("Savepoints: a nested transaction that throws undoes its own queued writes only")
    func nestedSavepoints() async throws {
        struct Refusal: Error {}
        let pool = try await TestDatabase.pool(size: 1)
        let prefix = uniquePrefix()
        try await pool.transaction { connection in
            try connection.send("INSERT INTO apps (id, name) VALUES (\(UUID()), \(prefix + "outer"))")
            do {
                try connection.transaction { connection in
                    try connection.send("INSERT INTO apps (id, name) VALUES (\(UUID()), \(prefix + "inner-unsent"))")
                    throw Refusal()
                }
            } catch is Refusal {}
            do {
                try connection.transaction { connection in
                    try connection.send("INSERT INTO apps (id, name) VALUES (\(UUID()), \(prefix + "inner-sent"))")
                    _ = try connection.query("SELECT 1")
                    throw Refusal()
                }
            } catch is Refusal {}
            try connection.transaction { connection in
                try connection.send("INSERT INTO apps (id, name) VALUES (\(UUID()), \(prefix + "kept"))")
            }
        }
        #expect(try await names(pool, prefix) == [prefix + "kept", prefix + "outer"])
        await pool.close()
    }

    @Test("Outside a transaction, send runs the statement at once")
    func sendOutsideTransaction() async throws {
        let pool = try await TestDatabase.pool(size: 1)
        let prefix = uniquePrefix()
        try await pool.withConnection { connection in
            try connection.send("INSERT INTO apps (id, name) VALUES (\(UUID()), \(prefix + "now"))")
        }
        #expect(try await names(pool, prefix) == [prefix + "now"])
        await pool.close()
    }

    @Test("A flush sends the queued statements at once: the server runs them while the body goes on, and COMMIT answers them")
    func flushRunsBeforeCommit() async throws {
        let pool = try await TestDatabase.pool(size: 1)
        let observer = try await TestDatabase.pool(size: 1)
        let prefix = uniquePrefix()
        // Below 2^31: PostgreSQL shows a bigint key's low half as `objid`, its high half (zero) as `classid`.
        let lockKey = Int64.random(in: 1...1_000_000_000)
        let flushed = TestLatch()
        let release = TestLatch()
        let writer = Task {
            try await pool.transaction { connection in
                try connection.send("INSERT INTO apps (id, name) VALUES (\(UUID()), \(prefix + "a"))")
                try connection.send("SELECT pg_advisory_xact_lock(\(lockKey))")
                try connection.flush()
                flushed.raise()
                release.block()
                try connection.send("INSERT INTO apps (id, name) VALUES (\(UUID()), \(prefix + "b"))")
            }
        }
        #expect(try await waitUntil { flushed.isRaised })
        // No answer was read, yet the server took the lock: the statements ran.
        let held = try await waitUntil {
            try await observer.query("SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND classid = 0 AND objid::bigint = \(lockKey)").count == 1
        }
        #expect(held)
        #expect(try await names(observer, prefix).isEmpty)
        release.raise()
        try await writer.value
        #expect(try await names(observer, prefix) == [prefix + "a", prefix + "b"])
        await observer.close()
        await pool.close()
    }

    @Test("A flushed write that fails is thrown by the next read or by COMMIT, and nothing of the transaction stays")
    func flushedWriteFails() async throws {
        let pool = try await TestDatabase.pool(size: 1)
        let prefix = uniquePrefix()
        let id = UUID()
        do {
            try await pool.transaction { connection in
                try connection.send("INSERT INTO apps (id, name) VALUES (\(id), \(prefix + "x"))")
                try connection.send("INSERT INTO apps (id, name) VALUES (\(id), \(prefix + "y"))")
                try connection.flush()
                try connection.send("INSERT INTO apps (id, name) VALUES (\(UUID()), \(prefix + "z"))")
            }
            Issue.record("expected a unique violation")
        } catch let error as PostgresError {
            #expect(error.isUniqueViolation && error.constraint == "apps_pkey")
        }
        await #expect(throws: PostgresError.self) {
            try await pool.transaction { connection in
                try connection.send("INSERT INTO apps (id, name) VALUES (NULL, \(prefix + "n"))")
                try connection.flush()
                _ = try connection.query("SELECT 1")
                Issue.record("the read ran after a failed flushed write")
            }
        }
        #expect(try await names(pool, prefix).isEmpty)
        // A read after a flush gets its own answer, after the flushed writes.
        let seen = try await pool.transaction { connection -> Int64 in
            try connection.send("INSERT INTO apps (id, name) VALUES (\(UUID()), \(prefix + "kept"))")
            try connection.flush()
            return try connection.query("SELECT count(*) FROM apps WHERE name LIKE \(prefix + "%")").first?.decode(0) ?? -1
        }
        #expect(seen == 1)
        #expect(try await names(pool, prefix) == [prefix + "kept"])
        await pool.close()
    }

    @Test("A body that throws after a flush stores nothing, and the connection is clean for the next lease")
    func throwAfterFlush() async throws {
        struct Refusal: Error {}
        let pool = try await TestDatabase.pool(size: 1)
        let prefix = uniquePrefix()
        await #expect(throws: Refusal.self) {
            try await pool.transaction { connection in
                try connection.send("INSERT INTO apps (id, name) VALUES (\(UUID()), \(prefix + "flushed"))")
                try connection.flush()
                try connection.send("INSERT INTO apps (id, name) VALUES (\(UUID()), \(prefix + "queued"))")
                throw Refusal()
            }
        }
        // The same after a flushed write that failed: the body's own error is thrown.
        await #expect(throws: Refusal.self) {
            try await pool.transaction { connection in
                try connection.send("INSERT INTO apps (id, name) VALUES (NULL, \(prefix + "null"))")
                try connection.flush()
                throw Refusal()
            }
        }
        #expect(try await names(pool, prefix).isEmpty)
        // On one lease: the connection is neither broken nor left in a transaction, and the
        // same session goes on.
        let (broken, samePID, idle) = try await pool.withConnection { connection -> (Bool, Bool, Bool) in
            let pid: Int? = try connection.query("SELECT pg_backend_pid()").first?.decode(0)
            do {
                try connection.transaction { connection in
                    try connection.send("INSERT INTO apps (id, name) VALUES (\(UUID()), \(prefix + "lease"))")
                    try connection.flush()
                    throw Refusal()
                }
            } catch is Refusal {}
            let after: Int? = try connection.query("SELECT pg_backend_pid()").first?.decode(0)
            let open: Int64? = try connection.query("SELECT count(*) FROM pg_stat_activity WHERE pid = pg_backend_pid() AND xact_start IS NOT NULL AND state = 'idle in transaction'").first?.decode(0)
            return (connection.isBroken, pid == after && pid != nil, open == 0)
        }
        #expect(!broken && samePID && idle)
        #expect(try await names(pool, prefix).isEmpty)
        await pool.close()
    }

    @Test("A transaction whose failed statement the body caught is rolled back and thrown at COMMIT, not reported committed; so is one whose savepoint could not be undone")
    func abortedTransactionDoesNotCommit() async throws {
        struct Refusal: Error {}
        let pool = try await TestDatabase.pool(size: 1)
        let prefix = uniquePrefix()
        await #expect(throws: PostgresError.self) {
            try await pool.transaction { connection in
                try connection.send("INSERT INTO apps (id, name) VALUES (\(UUID()), \(prefix + "before"))")
                do { _ = try connection.query("SELECT 1 / 0") } catch {}
            }
        }
        // An outer statement fails after a flush; a savepoint's body throws, and the rollback
        // to a savepoint the server skipped fails: the outer COMMIT must not pass as committed.
        await #expect(throws: PostgresError.self) {
            try await pool.transaction { connection in
                try connection.send("INSERT INTO apps (id, name) VALUES (NULL, \(prefix + "null"))")
                try connection.flush()
                do {
                    try connection.transaction { connection in
                        try connection.send("INSERT INTO apps (id, name) VALUES (\(UUID()), \(prefix + "inner"))")
                        try connection.flush()
                        throw Refusal()
                    }
                } catch is Refusal {}
            }
        }
        #expect(try await names(pool, prefix).isEmpty)
        #expect(try await pool.query("SELECT 1").count == 1)
        await pool.close()
    }

    @Test("A statement first sent into an open pipeline runs unprepared, and is prepared before a later transaction")
    func preparedAfterPipeline() async throws {
        let pool = try await TestDatabase.pool(size: 1)
        let prefix = uniquePrefix()
        // Unique text, so that no earlier statement of this connection prepared it.
        let marker = "late-\(UUID().uuidString)"
        func transaction(_ name: String) async throws {
            try await pool.transaction { connection in
                try connection.send("INSERT INTO apps (id, name) VALUES (\(UUID()), \(prefix + "first-" + name))")
                try connection.flush()
                try connection.send("INSERT INTO apps (id, name) SELECT gen_random_uuid(), \(prefix + name) || '\(unescaped: marker)'")
            }
        }
        try await transaction("1")
        #expect(try await Self.isPrepared(marker, on: pool) == false)
        try await transaction("2")
        #expect(try await Self.isPrepared(marker, on: pool))
        try await transaction("3")
        #expect(try await names(pool, prefix).sorted() == [
            prefix + "1" + marker, prefix + "2" + marker, prefix + "3" + marker,
            prefix + "first-1", prefix + "first-2", prefix + "first-3",
        ].sorted())
        await pool.close()
    }

    @Test("waitingNanoseconds counts the time spent waiting for the server's answers, and nothing for a statement only queued")
    func waitingTime() async throws {
        let pool = try await TestDatabase.pool(size: 1)
        let tenth: UInt64 = 100_000_000
        let (query, script) = try await pool.withConnection { connection -> (UInt64, UInt64) in
            let start = connection.waitingNanoseconds
            try connection.query("SELECT pg_sleep(0.1)")
            let afterQuery = connection.waitingNanoseconds
            try connection.execute("SELECT pg_sleep(0.1)")
            return (afterQuery - start, connection.waitingNanoseconds - afterQuery)
        }
        #expect(query >= tenth && script >= tenth)
        // The second time, when BEGIN and the statements are prepared (a preparation waits
        // for the server's answer, and counts).
        var waits: [(UInt64, UInt64)] = []
        for _ in 0..<2 {
            waits.append(try await pool.transaction { connection -> (UInt64, UInt64) in
                let start = connection.waitingNanoseconds
                try connection.send("SELECT 1")
                try connection.flush()
                let sent = connection.waitingNanoseconds
                _ = try connection.query(["SELECT pg_sleep(0.1)"])
                return (sent - start, connection.waitingNanoseconds - sent)
            })
        }
        let (queued, pipeline) = waits[1]
        #expect(queued == 0)
        #expect(pipeline >= tenth)
        await pool.close()
    }

    /// Whether the pool's one connection has a statement holding `marker` prepared (the
    /// pattern is a parameter, so this query's own text does not hold it).
    private static func isPrepared(_ marker: String, on pool: PostgresConnectionPool) async throws -> Bool {
        try await pool.withConnection { connection in
            try connection.query("SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE \("%" + marker + "%")")
                .first?.decode(0, as: Int64.self) == 1
        }
    }
}
