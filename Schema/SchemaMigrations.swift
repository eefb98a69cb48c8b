import Foundation

/// One SQL migration of `Schema/migrations`, named `NNN_description.sql`.
public struct SchemaMigration: Sendable, Hashable {
    public var version: Int
    public var name: String
    public var sql: String
}

/// The migrations this build of LocationGate ships with.
///
/// The binary carries them as Swift source (`Migrations+Embedded.swift`, written by
/// `Deploy/generate` from `Schema/migrations/*.sql`), so it migrates wherever it is copied: no
/// resource folder beside it, no path into the build tree.
public enum SchemaMigrations {
    /// The migrations in version order: those the binary carries, or those of `directory`, or
    /// of the folder `LOCGATE_SCHEMA_DIR` names, when given.
    public static func load(directory: URL? = nil) throws -> [SchemaMigration] {
        if let folder = directory
            ?? ProcessInfo.processInfo.environment["LOCGATE_SCHEMA_DIR"].map({ URL(fileURLWithPath: $0) })
        {
            return try read(folder)
        }
        return try embedded()
    }

    /// The migrations the binary carries, in version order.
    public static func embedded() throws -> [SchemaMigration] {
        try ordered(EmbeddedMigrations.files.map { try migration(file: $0.name, sql: $0.text) })
    }

    /// The `.sql` files of `folder`, in version order.
    public static func read(_ folder: URL) throws -> [SchemaMigration] {
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".sql") }
        return try ordered(names.map { name in
            try migration(file: name, sql: String(contentsOf: folder.appendingPathComponent(name), encoding: .utf8))
        })
    }

    /// The migration of the file `file` (`NNN_description.sql`) holding `sql`.
    static func migration(file: String, sql: String) throws -> SchemaMigration {
        guard let version = Int(file.prefix { $0.isNumber }) else {
            throw SchemaError.badName(file)
        }
        return SchemaMigration(version: version, name: String(file.dropLast(".sql".count)), sql: sql)
    }

    /// File-name order, which is version order for names that start with zero-padded numbers.
    private static func ordered(_ migrations: [SchemaMigration]) throws -> [SchemaMigration] {
        guard !migrations.isEmpty else { throw SchemaError.missingMigrations }
        return migrations.sorted { $0.name < $1.name }
    }
}

/// The schema files could not be read.
public enum SchemaError: Error, CustomStringConvertible {
    case missingMigrations
    case badName(String)

    public var description: String {
        switch self {
        case .missingMigrations: "no migrations: the folder holds no .sql file"
        case .badName(let name): "migration file \(name) does not start with a version number"
        }
    }
}
