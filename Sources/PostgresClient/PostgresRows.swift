import Foundation

/// The rows of a result, copied out of the `PGresult` (which is cleared at once) in text form.
public struct PostgresRows: Sendable, Sequence {
    public var columns: [String]
    public var values: [[String?]]
    /// Rows affected, from `PQcmdTuples` (INSERT/UPDATE/DELETE), or 0.
    public var affectedRows: Int

    public init(columns: [String], values: [[String?]], affectedRows: Int) {
        self.columns = columns
        self.values = values
        self.affectedRows = affectedRows
    }

    public var count: Int { values.count }
    public var isEmpty: Bool { values.isEmpty }
    public var first: PostgresRow? { values.first.map { PostgresRow(values: $0, columns: columns) } }
    public var last: PostgresRow? { values.last.map { PostgresRow(values: $0, columns: columns) } }

    public func makeIterator() -> some IteratorProtocol<PostgresRow> {
        values.lazy.map { PostgresRow(values: $0, columns: self.columns) }.makeIterator()
    }
}

/// One row; columns are read by position with their Swift type.
public struct PostgresRow: Sendable {
    public var values: [String?]
    public var columns: [String]

    // The decoders are inlinable so that each call site gets a specialized copy: unspecialized,
    // a replay spent a fifth of its time looking up generic metadata in them.

    /// The value of column `index`, decoded; throws on NULL or a value of another type.
    @inlinable
    public func decode<Value: PostgresDecodable>(_ index: Int, as type: Value.Type = Value.self) throws(PostgresError) -> Value {
        guard let value = try decodeIfPresent(index, as: type) else {
            throw PostgresError(.decoding, message: "column \(columnName(index)) is NULL, expected \(Value.self)")
        }
        return value
    }

    /// The value of column `index`, or nil for NULL.
    @inlinable
    public func decodeIfPresent<Value: PostgresDecodable>(_ index: Int, as type: Value.Type = Value.self) throws(PostgresError) -> Value? {
        guard index < values.count else {
            throw PostgresError(.decoding, message: "no column \(index) in a row of \(values.count)")
        }
        guard let text = values[index] else { return nil }
        guard let value = Value(postgresText: text) else {
            throw PostgresError(.decoding, message: "column \(columnName(index)) is not a \(Value.self)")
        }
        return value
    }

    @usableFromInline
    func columnName(_ index: Int) -> String {
        index < columns.count ? columns[index] : String(index)
    }
}

/// A Swift value that can be read from PostgreSQL's text format.
public protocol PostgresDecodable: Sendable {
    init?(postgresText: String)
}

extension String: PostgresDecodable {
    public init?(postgresText: String) { self = postgresText }
}

extension Int: PostgresDecodable {
    public init?(postgresText: String) { self.init(postgresText) }
}

extension Int64: PostgresDecodable {
    public init?(postgresText: String) { self.init(postgresText) }
}

extension UInt64: PostgresDecodable {
    public init?(postgresText: String) { self.init(postgresText) }
}

extension Double: PostgresDecodable {
    public init?(postgresText: String) { self.init(postgresText) }
}

extension Bool: PostgresDecodable {
    public init?(postgresText: String) {
        switch postgresText {
        case "t", "true": self = true
        case "f", "false": self = false
        default: return nil
        }
    }
}

extension UUID: PostgresDecodable {
    public init?(postgresText: String) { self.init(postgresUUIDText: postgresText) }
}

extension Date: PostgresDecodable {
    public init?(postgresText: String) {
        guard let date = PostgresTimestamp.parse(postgresText) else { return nil }
        self = date
    }
}
