import EventLog
import Foundation
import LocationGateSchema
import LocationGateTestSupport
import PostgresClient
import Testing

@Suite("Schema: migrations and the append-only log", .timeLimit(.minutes(3)))
struct SchemaTests {
    @Test("Migrations apply once, in order, and are idempotent")
    func migrationsIdempotent() async throws {
        let configuration = try await TestDatabase.createEmpty(prefix: "locgate_migrate")
        let pool = PostgresConnectionPool(configuration: configuration, size: 2, logger: TestDatabase.logger)
        let migrations = try SchemaMigrations.load()
        #expect(!migrations.isEmpty)
        #expect(migrations.map(\.version) == migrations.map(\.version).sorted())
        let migrator = SchemaMigrator(pool: pool, migrations: migrations, logger: TestDatabase.logger)
        #expect(try await migrator.pending().count == migrations.count)
        // Two migrators at once take turns.
        async let first = migrator.migrate()
        async let second = migrator.migrate()
        let applied = try await first.count + second.count
        #expect(applied == migrations.count)
        #expect(try await migrator.pending().isEmpty)
        #expect(try await migrator.migrate().isEmpty)
        await pool.close()
    }

    @Test("An edited migration is refused")
    func editedMigration() async throws {
        let configuration = try await TestDatabase.configuration()
        let pool = PostgresConnectionPool(configuration: configuration, size: 1, logger: TestDatabase.logger)
        var migrations = try SchemaMigrations.load()
        migrations[0].sql += "\n-- edited"
        let migrator = SchemaMigrator(pool: pool, migrations: migrations, logger: TestDatabase.logger)
        await #expect(throws: MigrationError.self) { try await migrator.migrate() }
        await pool.close()
    }

    @Test("The database refuses UPDATE, DELETE and TRUNCATE of events, for the owner too (trigger)")
    func appendOnlyForOwner() async throws {
        // A database of its own: TRUNCATE queues for an exclusive lock that would stall other tests.
        let pool = PostgresConnectionPool(
            configuration: try await TestDatabase.create(prefix: "locgate_truncate"), size: 1, logger: TestDatabase.logger)
        let fixture = LogFixture(pool: pool, log: EventLog(pool: pool, logger: TestDatabase.logger), appID: try await TestDatabase.makeApp(pool))
        _ = try await fixture.log.append(appID: fixture.appID, events: [event()])
        for statement: PostgresQuery in [
            "UPDATE events SET type = 'x' WHERE app_id = \(fixture.appID)",
            "DELETE FROM events WHERE app_id = \(fixture.appID)",
            "TRUNCATE events CASCADE",
        ] {
            do {
                try await fixture.pool.query(statement)
                Issue.record("\(statement.sql) was allowed")
            } catch let error as PostgresError {
                #expect(error.isInsufficientPrivilege, "\(error.debugDescription)")
                #expect(error.message.contains("append-only"))
            }
        }
        #expect(try await fixture.count() == 1)
        await fixture.pool.close()
    }

    @Test("The service role may read and append events but has no UPDATE or DELETE privilege")
    func appendOnlyForServiceRole() async throws {
        let owner = try await TestDatabase.configuration()
        let ownerPool = PostgresConnectionPool(configuration: owner, size: 1, logger: TestDatabase.logger)
        let role = "locgate_app_test_\(UUID().uuidString.prefix(8).lowercased())"
        // A role name cannot be bound; this one is made of fixed text and hex digits.
        try await ownerPool.withConnection { try $0.execute("CREATE ROLE \(role) LOGIN IN ROLE locgate_service") }
        let appID = try await TestDatabase.makeApp(ownerPool)
        let servicePool = PostgresConnectionPool(configuration: owner.with("user", role), size: 1, logger: TestDatabase.logger)
        let log = EventLog(pool: servicePool, logger: TestDatabase.logger)
        let results = try await log.append(appID: appID, events: [event()])
        #expect(results.first?.version == 1)
        for statement: PostgresQuery in [
            "UPDATE events SET type = 'x' WHERE app_id = \(appID)",
            "DELETE FROM events WHERE app_id = \(appID)",
        ] {
            do {
                try await servicePool.query(statement)
                Issue.record("\(statement.sql) was allowed")
            } catch let error as PostgresError {
                #expect(error.isInsufficientPrivilege)
                #expect(error.message.contains("permission denied"), "refused by privileges, before the trigger")
            }
        }
        await servicePool.close()
        await ownerPool.close()
    }
}
