import Foundation

/// One SQL migration of `Schema/migrations`, named `NNN_description.sql`.
public struct SchemaMigration: Sendable, Hashable {
    public var version: Int
    public var name: String
    public var sql: String
}

/// The migrations this build of LocationGate ships with.
public enum SchemaMigrations {
    /// Reads the bundled migrations in version order. The folder can be overridden with
    /// `LOCGATE_SCHEMA_DIR` for an installation that keeps them elsewhere.
    public static func load(directory: URL? = nil) throws -> [SchemaMigration] {
        let folder = directory
            ?? ProcessInfo.processInfo.environment["LOCGATE_SCHEMA_DIR"].map { URL(fileURLWithPath: $0) }
            ?? Bundle.module.url(forResource: "migrations", withExtension: nil)
        guard let folder else { throw SchemaError.missingMigrations }
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path)
            .filter { $0.hasSuffix(".sql") }
            .sorted()
        return try names.map { name in
            guard let version = Int(name.prefix { $0.isNumber }) else {
                throw SchemaError.badName(name)
            }
            let sql = try String(contentsOf: folder.appendingPathComponent(name), encoding: .utf8)
            return SchemaMigration(version: version, name: String(name.dropLast(4)), sql: sql)
        }
    }
}

/// The schema files could not be read.
public enum SchemaError: Error, CustomStringConvertible {
    case missingMigrations
    case badName(String)

    public var description: String {
        switch self {
        case .missingMigrations: "the migrations folder is missing from the build"
        case .badName(let name): "migration file \(name) does not start with a version number"
        }
    }
}
