import Foundation

/// A statement with its parameters. Built by string interpolation: every interpolated value
/// becomes a `$n` bind, never text in the SQL (the postgres-nio `PostgresQuery` idea, over
/// `PQexecParams`).
///
///     let rows = try connection.query("SELECT version FROM streams WHERE app_id = \(appId)")
public struct PostgresQuery: Sendable, Hashable, ExpressibleByStringInterpolation {
    public var sql: String
    public var binds: [PostgresBind]

    public init(unsafeSQL sql: String, binds: [PostgresBind] = []) {
        self.sql = sql
        self.binds = binds
    }

    public init(stringLiteral value: String) {
        self.init(unsafeSQL: value)
    }

    public init(stringInterpolation: StringInterpolation) {
        self.init(unsafeSQL: stringInterpolation.sql, binds: stringInterpolation.binds)
    }

    public struct StringInterpolation: StringInterpolationProtocol {
        var sql = ""
        var binds: [PostgresBind] = []

        public init(literalCapacity: Int, interpolationCount: Int) {
            sql.reserveCapacity(literalCapacity + interpolationCount * 3)
        }

        public mutating func appendLiteral(_ literal: String) {
            sql += literal
        }

        /// A value, sent as a parameter.
        public mutating func appendInterpolation(_ value: some PostgresEncodable) {
            binds.append(value.postgresBind)
            sql += "$\(binds.count)"
        }

        /// An optional value: NULL when nil.
        public mutating func appendInterpolation(_ value: (some PostgresEncodable)?) {
            binds.append(value?.postgresBind ?? .null)
            sql += "$\(binds.count)"
        }

        /// Trusted SQL text from the program itself (an identifier, a fixed clause); never input.
        public mutating func appendInterpolation(unescaped text: String) {
            sql += text
        }
    }
}

/// One parameter in text format with its type OID (0 lets the server infer it).
public struct PostgresBind: Sendable, Hashable {
    public var text: String?
    public var typeOID: UInt32

    public init(text: String?, typeOID: UInt32) {
        self.text = text
        self.typeOID = typeOID
    }

    public static let null = PostgresBind(text: nil, typeOID: 0)
}

/// A Swift value that can be sent as a parameter.
public protocol PostgresEncodable: Sendable {
    var postgresBind: PostgresBind { get }
}

/// Type OIDs from `pg_type`.
public enum PostgresType {
    public static let bool: UInt32 = 16
    public static let bytea: UInt32 = 17
    public static let int8: UInt32 = 20
    public static let int4: UInt32 = 23
    public static let text: UInt32 = 25
    public static let float8: UInt32 = 701
    public static let textArray: UInt32 = 1009
    public static let int8Array: UInt32 = 1016
    public static let timestamptz: UInt32 = 1184
    public static let uuid: UInt32 = 2950
    public static let uuidArray: UInt32 = 2951
    public static let jsonb: UInt32 = 3802
    public static let jsonbArray: UInt32 = 3807
    public static let timestamptzArray: UInt32 = 1185
    public static let boolArray: UInt32 = 1000
}

extension String: PostgresEncodable {
    public var postgresBind: PostgresBind { PostgresBind(text: self, typeOID: PostgresType.text) }
}

extension Int: PostgresEncodable {
    public var postgresBind: PostgresBind { PostgresBind(text: String(self), typeOID: PostgresType.int8) }
}

extension Int64: PostgresEncodable {
    public var postgresBind: PostgresBind { PostgresBind(text: String(self), typeOID: PostgresType.int8) }
}

extension Int32: PostgresEncodable {
    public var postgresBind: PostgresBind { PostgresBind(text: String(self), typeOID: PostgresType.int4) }
}

extension Bool: PostgresEncodable {
    public var postgresBind: PostgresBind { PostgresBind(text: self ? "t" : "f", typeOID: PostgresType.bool) }
}

extension Double: PostgresEncodable {
    public var postgresBind: PostgresBind { PostgresBind(text: String(self), typeOID: PostgresType.float8) }
}

extension UUID: PostgresEncodable {
    public var postgresBind: PostgresBind { PostgresBind(text: lowercasedText, typeOID: PostgresType.uuid) }
}

extension Date: PostgresEncodable {
    public var postgresBind: PostgresBind {
        PostgresBind(text: PostgresTimestamp.format(self), typeOID: PostgresType.timestamptz)
    }
}

/// JSON text sent as `jsonb`.
public struct PostgresJSON: PostgresEncodable, Hashable {
    public var text: String

    public init(_ text: String) {
        self.text = text
    }

    public var postgresBind: PostgresBind { PostgresBind(text: text, typeOID: PostgresType.jsonb) }
}

/// An array parameter, for `unnest($1::text[])` style bulk statements.
public struct PostgresArray: PostgresEncodable, Hashable {
    public var elements: [String?]
    public var typeOID: UInt32

    public init(_ elements: [String?], typeOID: UInt32) {
        self.elements = elements
        self.typeOID = typeOID
    }

    public init(_ values: [String]) { self.init(values, typeOID: PostgresType.textArray) }
    public init(_ values: [Int64]) { self.init(values.map { String($0) }, typeOID: PostgresType.int8Array) }
    public init(_ values: [UUID]) { self.init(values.map(\.lowercasedText), typeOID: PostgresType.uuidArray) }
    public init(_ values: [Date]) { self.init(values.map(PostgresTimestamp.format), typeOID: PostgresType.timestamptzArray) }
    public init(json values: [String?]) { self.init(values, typeOID: PostgresType.jsonbArray) }

    /// The array literal: every element quoted, `"` and `\` escaped, NULL unquoted. Built as
    /// UTF-8 bytes: bulk statements send thousands of elements, and appending them scalar by
    /// scalar to a `String` was a quarter of a 1,000-event append's time.
    public var postgresBind: PostgresBind {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(2 + elements.reduce(0) { $0 + ($1?.utf8.count ?? 4) + 3 })
        bytes.append(UInt8(ascii: "{"))
        for (index, element) in elements.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            guard var element else {
                bytes.append(contentsOf: "NULL".utf8)
                continue
            }
            bytes.append(UInt8(ascii: "\""))
            element.withUTF8 { utf8 in
                // Runs without a quote or backslash are copied whole, not byte by byte.
                var run = 0
                for (offset, byte) in utf8.enumerated() where byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") {
                    bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[run..<offset]))
                    bytes.append(UInt8(ascii: "\\"))
                    run = offset
                }
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[run...]))
            }
            bytes.append(UInt8(ascii: "\""))
        }
        bytes.append(UInt8(ascii: "}"))
        return PostgresBind(text: String(decoding: bytes, as: UTF8.self), typeOID: typeOID)
    }
}
