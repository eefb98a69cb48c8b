import Foundation
import LocationGateSchema
import Testing

/// The binary carries its migrations as Swift source (`Schema/Migrations+Embedded.swift`,
/// written by `Deploy/generate`). A migration added or changed without running the generator
/// would ship a binary that does not know it; an embedded text that differs by one byte from
/// the file would be refused as edited by every database that applied the file. No database.
@Suite("Schema: the migrations the binary carries")
struct EmbeddedMigrationsTests {
    /// `Schema/migrations` of this checkout.
    static let folder = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()  // EventLogTests
        .deletingLastPathComponent()  // Tests
        .deletingLastPathComponent()  // the checkout
        .appendingPathComponent("Schema/migrations")

    @Test("The embedded migrations are Schema/migrations/*.sql byte for byte (else run `bash Deploy/generate`)")
    func embeddedMatchTheFiles() throws {
        let files = try SchemaMigrations.read(Self.folder)
        let embedded = try SchemaMigrations.embedded()
        #expect(
            embedded.map(\.name) == files.map(\.name),
            "the files and the embedded migrations differ: run `bash Deploy/generate`")
        for file in files {
            let carried = embedded.first { $0.name == file.name }
            #expect(
                carried.map { Array($0.sql.utf8) } == Array(file.sql.utf8),
                "\(file.name) differs from its embedded text: run `bash Deploy/generate`")
            #expect(carried?.version == file.version)
        }
    }

    @Test("Versions are unique and in order")
    func versionsInOrder() throws {
        let versions = try SchemaMigrations.embedded().map(\.version)
        #expect(!versions.isEmpty)
        #expect(versions == versions.sorted())
        #expect(Set(versions).count == versions.count)
    }
}
