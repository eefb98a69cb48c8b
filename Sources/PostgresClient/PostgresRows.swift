import CLibPQ
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

/// One row of a result as libpq holds it (`PostgresConnection.forEachRow`), read in place:
/// valid only during the call that received it.
public struct PostgresResultRow {
    let result: OpaquePointer
    let row: Int32
    /// The row's columns.
    public let columns: Int32

    init(result: OpaquePointer, row: Int32, columns: Int32) {
        self.result = result
        self.row = row
        self.columns = columns
    }

    /// Whether column `index` is NULL (or beyond the row).
    public func isNull(_ index: Int) -> Bool {
        Int32(index) >= columns || PQgetisnull(result, row, Int32(index)) == 1
    }

    /// Column `index` as text; nil for NULL.
    public func string(_ index: Int) -> String? {
        isNull(index) ? nil : String(cString: PQgetvalue(result, row, Int32(index)))
    }

    /// Column `index`, an integer in text form, read from its bytes without a `String`; nil
    /// for NULL. Throws for text that is not a 64-bit integer.
    public func int64(_ index: Int) throws(PostgresError) -> Int64? {
        guard !isNull(index), let text = PQgetvalue(result, row, Int32(index)) else { return nil }
        let length = Int(PQgetlength(result, row, Int32(index)))
        var value: Int64 = 0
        var position = 0
        let negative = length > 0 && text[0] == CChar(UInt8(ascii: "-"))
        if negative { position = 1 }
        guard position < length else { throw Self.notInteger(index) }
        while position < length {
            let digit = Int64(UInt8(bitPattern: text[position])) - 48
            guard digit >= 0 && digit <= 9 else { throw Self.notInteger(index) }
            // Accumulated negatively so that Int64.min reads too.
            let (times, overflowTimes) = value.multipliedReportingOverflow(by: 10)
            let (next, overflowMinus) = times.subtractingReportingOverflow(digit)
            guard !overflowTimes && !overflowMinus else { throw Self.notInteger(index) }
            value = next
            position += 1
        }
        if negative { return value }
        guard value != Int64.min else { throw Self.notInteger(index) }
        return -value
    }

    private static func notInteger(_ index: Int) -> PostgresError {
        PostgresError(.decoding, message: "column \(index) is not an Int64")
    }
}
