/// A parsed JSON value, for reading back what the service itself stored (event data, outcomes,
/// device states) without Foundation's `JSONDecoder`, which a profile of the replay found to
/// cost a fifth of its time.
///
/// Also the one value type for any JSON the product handles as a tree: event `data` shown as it
/// was stored (history), analytics rows, OFREP bodies, device-token headers and claims.
/// `JSONWriter.node(_:sortedKeys:)` writes it back.
///
/// Client input still goes through `Codable`, whose errors name the offending field; readers
/// built on this return nil on anything unexpected, and their callers fall back to `Codable`.
/// Client bodies are parsed with `parseStrictly`, which refuses an object that names a member
/// twice (SPEC §14, RFC 7493) in the same pass, and says where.
public enum JSONNode: Sendable, Hashable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONNode])
    /// Members in document order; objects here have a dozen keys, so a linear search is cheaper
    /// than hashing into a dictionary.
    case object([Member])

    public struct Member: Sendable, Hashable {
        public var key: String
        public var value: JSONNode

        public init(key: String, value: JSONNode) {
            self.key = key
            self.value = value
        }
    }

    /// Parses JSON text; nil when it is not valid JSON.
    public static func parse(_ text: String) -> JSONNode? {
        var text = text
        return text.withUTF8 { parse(utf8: $0) }
    }

    /// Parses JSON bytes held in an array (a decoded token part, a body already read).
    public static func parse(bytes: [UInt8]) -> JSONNode? {
        bytes.withUnsafeBufferPointer { parse(utf8: $0) }
    }

    /// Parses JSON bytes (a request body) without copying them into a `String` first.
    public static func parse(utf8 buffer: UnsafeBufferPointer<UInt8>) -> JSONNode? {
        var parser = Parser(bytes: buffer)
        return parser.document()
    }

    /// Why `parseStrictly` refused a text.
    public enum ParseError: Error, Sendable, Hashable {
        /// Not JSON.
        case invalid
        /// Arrays and objects nested deeper than the parser goes (`Parser.maxDepth`).
        case tooDeep
        /// An object names a member twice (RFC 7493's I-JSON forbids it, and JSON leaves open
        /// which one counts): the path of the second, from the root. Reported only for a text
        /// that is JSON otherwise.
        case repeatedName(Path)
    }

    /// Where a value stands in a document: the members and elements leading to it from the root.
    public struct Path: Sendable, Hashable, CustomStringConvertible {
        public enum Step: Sendable, Hashable {
            case member(String)
            case element(Int)
        }

        public var steps: [Step]

        public init(_ steps: [Step]) {
            self.steps = steps
        }

        /// As the API's messages name a field: `events[0].data.state`.
        public var description: String {
            var text = ""
            for step in steps {
                switch step {
                case .member(let name): text += text.isEmpty ? name : "." + name
                case .element(let index): text += "[\(index)]"
                }
            }
            return text
        }
    }

    /// How deep arrays and objects may nest in a text the parser reads.
    public static var maxDepth: Int { Parser.maxDepth }

    /// Parses client input (a request body): JSON whose every object names each member once.
    /// The check is part of the one parse (an object's names are compared as its members are
    /// read), so it costs a body no second pass.
    public static func parseStrictly(utf8 buffer: UnsafeBufferPointer<UInt8>) throws(ParseError) -> JSONNode {
        var parser = Parser(bytes: buffer, checksNames: true)
        if let value = parser.document() { return value }
        if parser.tooDeep { throw ParseError.tooDeep }
        guard let repeated = parser.repeated else { throw ParseError.invalid }
        // The parse stopped at the repeated name: what follows must still be JSON for the
        // repeat to be the answer (a text that is not JSON is that first). Only a refused
        // body is read twice.
        var plain = Parser(bytes: buffer)
        guard plain.document() != nil else { throw plain.tooDeep ? ParseError.tooDeep : ParseError.invalid }
        throw ParseError.repeatedName(Path(repeated.reversed()))
    }

    /// As `parseStrictly(utf8:)`, for bytes held in an array.
    public static func parseStrictly(bytes: [UInt8]) throws(ParseError) -> JSONNode {
        let result: Result<JSONNode, ParseError> = bytes.withUnsafeBufferPointer { buffer in
            do throws(ParseError) {
                return .success(try parseStrictly(utf8: buffer))
            } catch {
                return .failure(error)
            }
        }
        switch result {
        case .success(let value): return value
        case .failure(let error): throw error
        }
    }

    /// True when this is an object whose keys are all different (what JSON leaves open, and
    /// readers of client input refuse to guess at).
    public var hasUniqueKeys: Bool {
        guard case .object(let members) = self else { return false }
        for (index, member) in members.enumerated() {
            for other in members[(index + 1)...] where other.key == member.key { return false }
        }
        return true
    }

    /// The value with every object's members sorted by key (by their UTF-8 bytes, as
    /// `JSONWriter.node(_:sortedKeys:)` writes them), at every depth: for comparing JSON whose
    /// objects were written in different orders. Nothing else changes: a boolean stays apart
    /// from a number, `null` from an absent member, and arrays keep their order.
    public var inKeyOrder: JSONNode {
        switch self {
        case .null, .bool, .number, .string:
            self
        case .array(let items):
            .array(items.map(\.inKeyOrder))
        case .object(let members):
            .object(members.map { Member(key: $0.key, value: $0.value.inKeyOrder) }
                .sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) })
        }
    }

    /// The value of an object's key; nil when absent or when this is not an object.
    public subscript(key: String) -> JSONNode? {
        guard case .object(let members) = self else { return nil }
        for member in members where member.key == key { return member.value }
        return nil
    }

    public var string: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    public var bool: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    /// An integral number.
    public var int: Int? {
        guard case .number(let value) = self, let exact = Int(exactly: value) else { return nil }
        return exact
    }

    public var array: [JSONNode]? {
        if case .array(let values) = self { return values }
        return nil
    }

    public var number: Double? {
        if case .number(let value) = self { return value }
        return nil
    }

    /// An object's members in document order; nil when this is not an object.
    public var members: [Member]? {
        if case .object(let members) = self { return members }
        return nil
    }

    public var isNull: Bool { self == .null }

    /// An optional member: `.some(nil)` when absent or null, nil when present but not what
    /// `read` accepts.
    public func optional<Value>(_ key: String, _ read: (JSONNode) -> Value?) -> Value?? {
        guard let node = self[key], !node.isNull else { return .some(nil) }
        return read(node).map { .some($0) }
    }

    /// An optional member naming a case of a `String` enum, as `optional(_:_:)`.
    public func optional<Value: RawRepresentable>(_ key: String, as type: Value.Type) -> Value?? where Value.RawValue == String {
        optional(key) { $0.string.flatMap(Value.init(rawValue:)) }
    }

    /// A string member that names a case of a `String` enum.
    public func value<Value: RawRepresentable>(_ key: String, as type: Value.Type) -> Value? where Value.RawValue == String {
        self[key]?.string.flatMap(Value.init(rawValue:))
    }
}

extension JSONNode {
    struct Parser {
        let bytes: UnsafeBufferPointer<UInt8>
        var index = 0
        /// Arrays and objects open around the current value. The parser recurses into them, and
        /// it reads client bodies too (`EventBatch.read`): a body nested a million deep must be
        /// refused, not overflow the stack. Nothing this service reads is nested more than a
        /// few deep.
        private var depth = 0
        static let maxDepth = 64
        /// Whether an object naming a member twice stops the parse (client input).
        let checksNames: Bool
        /// Set when the parse stopped at a repeated name: its path, innermost step first, each
        /// enclosing object and array adding its step as the parse unwinds (nothing is kept
        /// while the parse goes well).
        private(set) var repeated: [Path.Step]?
        /// Set when the parse stopped at `maxDepth`.
        private(set) var tooDeep = false
        /// Up to this many members an object's names are compared one by one (objects here
        /// have a dozen at most); beyond, they are kept in a set, so that a body of one object
        /// with a hundred thousand members costs no more than its length.
        static let namesComparedInPlace = 16

        init(bytes: UnsafeBufferPointer<UInt8>, checksNames: Bool = false) {
            self.bytes = bytes
            self.checksNames = checksNames
        }

        /// The whole text as one value, nothing but space after it.
        mutating func document() -> JSONNode? {
            guard let value = value() else { return nil }
            skipSpace()
            return index == bytes.count ? value : nil
        }

        mutating func skipSpace() {
            while index < bytes.count {
                switch bytes[index] {
                case UInt8(ascii: " "), UInt8(ascii: "\n"), UInt8(ascii: "\r"), UInt8(ascii: "\t"): index += 1
                default: return
                }
            }
        }

        mutating func value() -> JSONNode? {
            skipSpace()
            guard index < bytes.count else { return nil }
            switch bytes[index] {
            case UInt8(ascii: "{"): return object()
            case UInt8(ascii: "["): return array()
            case UInt8(ascii: "\""): return string().map(JSONNode.string)
            case UInt8(ascii: "t"): return literal("true", .bool(true))
            case UInt8(ascii: "f"): return literal("false", .bool(false))
            case UInt8(ascii: "n"): return literal("null", .null)
            default: return number()
            }
        }

        private mutating func literal(_ word: StaticString, _ value: JSONNode) -> JSONNode? {
            let count = word.utf8CodeUnitCount
            guard index + count <= bytes.count else { return nil }
            for offset in 0..<count where bytes[index + offset] != word.utf8Start[offset] { return nil }
            index += count
            return value
        }

        private mutating func object() -> JSONNode? {
            guard depth < Self.maxDepth else {
                tooDeep = true
                return nil
            }
            depth += 1
            defer { depth -= 1 }
            index += 1
            var members: [Member] = []
            var names: Set<String>?
            skipSpace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
                index += 1
                return .object(members)
            }
            while true {
                skipSpace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: "\""), let key = string() else { return nil }
                if checksNames, Self.repeats(key, in: members, names: &names) {
                    repeated = [.member(key)]
                    return nil
                }
                skipSpace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { return nil }
                index += 1
                guard let value = value() else {
                    repeated?.append(.member(key))
                    return nil
                }
                members.append(Member(key: key, value: value))
                skipSpace()
                guard index < bytes.count else { return nil }
                if bytes[index] == UInt8(ascii: ",") {
                    index += 1
                } else if bytes[index] == UInt8(ascii: "}") {
                    index += 1
                    return .object(members)
                } else {
                    return nil
                }
            }
        }

        /// Whether `key` names a member of `members` already; `names` holds their names once
        /// the object has more than `namesComparedInPlace` (and takes `key` in).
        private static func repeats(_ key: String, in members: [Member], names: inout Set<String>?) -> Bool {
            if names != nil { return names?.insert(key).inserted == false }
            for member in members where member.key == key { return true }
            if members.count >= namesComparedInPlace {
                var all = Set(members.map(\.key))
                all.insert(key)
                names = all
            }
            return false
        }

        private mutating func array() -> JSONNode? {
            guard depth < Self.maxDepth else {
                tooDeep = true
                return nil
            }
            depth += 1
            defer { depth -= 1 }
            index += 1
            var values: [JSONNode] = []
            skipSpace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
                index += 1
                return .array(values)
            }
            while true {
                guard let value = value() else {
                    repeated?.append(.element(values.count))
                    return nil
                }
                values.append(value)
                skipSpace()
                guard index < bytes.count else { return nil }
                if bytes[index] == UInt8(ascii: ",") {
                    index += 1
                } else if bytes[index] == UInt8(ascii: "]") {
                    index += 1
                    return .array(values)
                } else {
                    return nil
                }
            }
        }

        /// A string at `index` (which is its opening quote).
        private mutating func string() -> String? {
            index += 1
            let start = index
            // The common case: no escapes, one copy of the bytes.
            while index < bytes.count {
                let byte = bytes[index]
                if byte == UInt8(ascii: "\"") {
                    let value = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
                    index += 1
                    return value
                }
                if byte == UInt8(ascii: "\\") || byte < 0x20 { break }
                index += 1
            }
            var decoded = Array(bytes[start..<index])
            while index < bytes.count {
                let byte = bytes[index]
                index += 1
                switch byte {
                case UInt8(ascii: "\""):
                    return String(decoding: decoded, as: UTF8.self)
                case UInt8(ascii: "\\"):
                    guard index < bytes.count else { return nil }
                    let escape = bytes[index]
                    index += 1
                    switch escape {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): decoded.append(escape)
                    case UInt8(ascii: "b"): decoded.append(0x08)
                    case UInt8(ascii: "f"): decoded.append(0x0C)
                    case UInt8(ascii: "n"): decoded.append(0x0A)
                    case UInt8(ascii: "r"): decoded.append(0x0D)
                    case UInt8(ascii: "t"): decoded.append(0x09)
                    case UInt8(ascii: "u"):
                        guard var scalar = hex4() else { return nil }
                        if (0xD800..<0xDC00).contains(scalar) {
                            guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else { return nil }
                            index += 2
                            guard let low = hex4(), (0xDC00..<0xE000).contains(low) else { return nil }
                            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                        }
                        guard let unicode = Unicode.Scalar(scalar) else { return nil }
                        decoded.append(contentsOf: String(Character(unicode)).utf8)
                    default:
                        return nil
                    }
                case 0..<0x20:
                    return nil
                default:
                    decoded.append(byte)
                }
            }
            return nil
        }

        private mutating func hex4() -> UInt32? {
            guard index + 4 <= bytes.count else { return nil }
            var value: UInt32 = 0
            for _ in 0..<4 {
                let byte = bytes[index]
                index += 1
                let digit: UInt8
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
                case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
                default: return nil
                }
                value = value << 4 | UInt32(digit)
            }
            return value
        }

        /// A number as JSON's grammar has it (`-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`):
        /// nothing else, so that no text `JSONDecoder` refuses reads as a number here.
        private mutating func number() -> JSONNode? {
            let start = index
            var negative = false
            if index < bytes.count, bytes[index] == UInt8(ascii: "-") {
                negative = true
                index += 1
            }
            func isDigit(_ at: Int) -> Bool {
                at < bytes.count && bytes[at] >= UInt8(ascii: "0") && bytes[at] <= UInt8(ascii: "9")
            }
            guard isDigit(index) else { return nil }
            var integral = true
            var value: Int64 = 0
            if bytes[index] == UInt8(ascii: "0") {
                index += 1
            } else {
                while isDigit(index) {
                    let (times, overflow1) = value.multipliedReportingOverflow(by: 10)
                    let (sum, overflow2) = times.addingReportingOverflow(Int64(bytes[index] - UInt8(ascii: "0")))
                    if overflow1 || overflow2 { integral = false } else { value = sum }
                    index += 1
                }
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
                integral = false
                index += 1
                guard isDigit(index) else { return nil }
                while isDigit(index) { index += 1 }
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
                integral = false
                index += 1
                if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
                guard isDigit(index) else { return nil }
                while isDigit(index) { index += 1 }
            }
            if integral { return .number(Double(negative ? -value : value)) }
            let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
            return Double(text).map(JSONNode.number)
        }
    }
}
