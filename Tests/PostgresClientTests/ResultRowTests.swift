import Foundation
import LocationGateTestSupport
import PostgresClient
import Testing

/// `forEachRow` reads rows where libpq holds them: the same values as `query`, integers read
/// from their bytes, and the same typed errors.
@Suite("Rows read in place (real server)", .timeLimit(.minutes(2)))
struct ResultRowTests {
    @Test("Integers at both ends, negatives, NULLs and text read as query reads them; bad integer text is a decoding error")
    func valuesAsQueryReadsThem() async throws {
        let pool = try await TestDatabase.pool(size: 1)
        let sql: PostgresQuery = """
            SELECT * FROM (VALUES
                (9223372036854775807::int8, 'a'::text), ('-9223372036854775808'::int8, 'é, "quoted"'), (0::int8, ''),
                (-42::int8, NULL), (NULL::int8, 'x')) AS v (n, t)
            """
        let expected: [(Int64?, String?)] = try await pool.query(sql).map { row in
            (try row.decodeIfPresent(0, as: Int64.self), try row.decodeIfPresent(1, as: String.self))
        }
        let read = try await pool.withConnection { connection -> [(Int64?, String?)] in
            var read: [(Int64?, String?)] = []
            try connection.forEachRow(sql) { row in
                #expect(row.columns == 2)
                read.append((try row.int64(0), row.string(1)))
            }
            return read
        }
        #expect(read.count == 5)
        #expect(read.map(\.0) == expected.map(\.0))
        #expect(read.map(\.1) == expected.map(\.1))
        #expect(read.map(\.0) == [Int64.max, Int64.min, 0, -42, nil])
        try await pool.withConnection { connection in
            for text in ["12a", "", "-", "9223372036854775808"] {
                do {
                    try connection.forEachRow("SELECT \(text)::text") { row in _ = try row.int64(0) }
                    Issue.record("\(text) read as an integer")
                } catch let error as PostgresError {
                    #expect(error.code == .decoding, "\(error)")
                }
            }
        }
        await pool.close()
    }

    @Test("Queued writes go first, and a failing statement throws the server's SQLSTATE, leaving the connection usable")
    func queuedWritesAndErrors() async throws {
        let pool = try await TestDatabase.pool(size: 1)
        let name = "rows-\(UUID().uuidString.prefix(8))"
        let seen = try await pool.transaction { connection -> [String] in
            try connection.send("INSERT INTO apps (id, name) VALUES (\(UUID()), \(name))")
            var seen: [String] = []
            try connection.forEachRow("SELECT name FROM apps WHERE name = \(name)") { row in seen.append(row.string(0) ?? "") }
            return seen
        }
        #expect(seen == [name])
        try await pool.withConnection { connection in
            do {
                try connection.forEachRow("SELECT 1 / 0") { _ in }
                Issue.record("division by zero answered")
            } catch let error as PostgresError {
                #expect(error.sqlState == "22012", "\(error)")
            }
            var one: Int64?
            try connection.forEachRow("SELECT 1") { row in one = try row.int64(0) }
            #expect(one == 1)
        }
        await pool.close()
    }
}
