import Foundation
import LocationGateTestSupport
import PostgresClient
import Testing

/// Statements queued with `send(_:)` go with the transaction's next answered statement or its
/// COMMIT, in one pipeline: these check that queueing changes no transaction's outcome.
@Suite("Queued statements in pipelines (real server)", .timeLimit(.minutes(2)))
struct PipelineTests {
    private func names(_ pool: PostgresConnectionPool, _ prefix: String) async throws -> [String] {
        try await pool.query("SELECT name FROM apps WHERE name LIKE \(prefix + "%") ORDER BY name").map { try $0.decode(0) }
    }

    @Test("Queued writes commit with COMMIT, in order, and a later read in the transaction sees them")
    func queuedWritesCommit() async throws {
        let pool = try await TestDatabase.pool(size: 1)
        let prefix = "pipe-\(UUID().uuidString.prefix(8))-"
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
        let prefix = "pipe-\(UUID().uuidString.prefix(8))-"
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
        let prefix = "pipe-\(UUID().uuidString.prefix(8))-"
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
        let prefix = "pipe-\(UUID().uuidString.prefix(8))-"
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
        let prefix = "pipe-\(UUID().uuidString.prefix(8))-"
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
        let prefix = "pipe-\(UUID().uuidString.prefix(8))-"
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
        let prefix = "pipe-\(UUID().uuidString.prefix(8))-"
        try await pool.withConnection { connection in
            try connection.send("INSERT INTO apps (id, name) VALUES (\(UUID()), \(prefix + "now"))")
        }
        #expect(try await names(pool, prefix) == [prefix + "now"])
        await pool.close()
    }
}
