/// A minimal JSON writer for the forms the service stores on every append (event data,
/// outcomes, device states) and the JSON it writes itself (OFREP bodies, analytics rows,
/// history, stream messages, device tokens).
///
/// Why not `JSONEncoder`: a profile of a 1,000-event append put 42% of the server's time in
/// Foundation's encoder, for objects of a dozen fixed fields. This writes the same JSON (the
/// tests check that `JSONDecoder` reads it back to the same value) straight into UTF-8 bytes,
/// escaping strings as `JSONEncoder` does with `.withoutEscapingSlashes`, so that what a
/// writer here replaced keeps its bytes (an OFREP ETag is a hash of them).
public struct JSONWriter: Sendable {
    public private(set) var bytes: [UInt8] = []
    /// Nothing written yet in the current object or array: no comma before the next value.
    private var first = true
    /// A key was just written: its value follows without a comma.
    private var afterKey = false

    public init(capacity: Int = 256) {
        bytes.reserveCapacity(capacity)
    }

    /// The JSON text.
    public var text: String { String(decoding: bytes, as: UTF8.self) }

    private mutating func separator() {
        if afterKey {
            afterKey = false
        } else if !first {
            bytes.append(UInt8(ascii: ","))
        }
        first = false
    }

    public mutating func objectStart() {
        separator()
        bytes.append(UInt8(ascii: "{"))
        first = true
    }

    public mutating func objectEnd() {
        bytes.append(UInt8(ascii: "}"))
        first = false
    }

    public mutating func arrayStart() {
        separator()
        bytes.append(UInt8(ascii: "["))
        first = true
    }

    public mutating func arrayEnd() {
        bytes.append(UInt8(ascii: "]"))
        first = false
    }

    /// A key of the current object; the next value written is its value.
    public mutating func key(_ name: StaticString) {
        separator()
        bytes.append(UInt8(ascii: "\""))
        name.withUTF8Buffer { bytes.append(contentsOf: $0) }
        bytes.append(UInt8(ascii: "\""))
        bytes.append(UInt8(ascii: ":"))
        afterKey = true
    }

    /// A key that is data (a session key), escaped as a string; the next value is its value.
    public mutating func key(_ name: String) {
        string(name)
        bytes.append(UInt8(ascii: ":"))
        afterKey = true
    }

    public mutating func string(_ value: String) {
        separator()
        bytes.append(UInt8(ascii: "\""))
        // Most strings need no escape: their bytes are copied in one go, not appended one by one.
        var value = value
        let copied = value.withUTF8 { text -> Bool in
            guard !text.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) else { return false }
            bytes.append(contentsOf: text)
            return true
        }
        if !copied { escaped(value) }
        bytes.append(UInt8(ascii: "\""))
    }

    private mutating func escaped(_ value: String) {
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "\""): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
            case UInt8(ascii: "\\"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
            case UInt8(ascii: "\n"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case UInt8(ascii: "\r"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case UInt8(ascii: "\t"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            case 0x08: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "b")])
            case 0x0C: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "f")])
            case 0..<0x20:
                let hex: [UInt8] = Array("0123456789abcdef".utf8)
                bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"),
                                          hex[Int(byte >> 4)], hex[Int(byte & 0xF)]])
            default: bytes.append(byte)
            }
        }
    }

    public mutating func bool(_ value: Bool) {
        separator()
        if value { bytes.append(contentsOf: "true".utf8) } else { bytes.append(contentsOf: "false".utf8) }
    }

    public mutating func int(_ value: Int) {
        separator()
        bytes.append(contentsOf: String(value).utf8)
    }

    public mutating func null() {
        separator()
        bytes.append(contentsOf: "null".utf8)
    }

    /// A number as `JSONEncoder` writes the values this service holds as `Double`: a whole
    /// number below 10^15 as an integer (`3`, not `3.0`), any other as its shortest
    /// round-tripping text (`0.25`, `1e+15`). JSON has no infinity or NaN: those are `null`.
    public mutating func number(_ value: Double) {
        separator()
        guard value.isFinite else {
            bytes.append(contentsOf: "null".utf8)
            return
        }
        if value.rounded() == value, abs(value) < 1e15 {
            bytes.append(contentsOf: String(Int64(value)).utf8)
            return
        }
        var text = value.description
        if text.hasSuffix(".0") { text.removeLast(2) }
        bytes.append(contentsOf: text.utf8)
    }

    /// A whole value. With `sortedKeys`, every object's members are written in the byte order
    /// of their keys, as `JSONEncoder`'s `.sortedKeys` does, so that equal values give equal
    /// bytes whatever order they were built or stored in.
    public mutating func node(_ value: JSONNode, sortedKeys: Bool = false) {
        switch value {
        case .null: null()
        case .bool(let flag): bool(flag)
        case .number(let number): self.number(number)
        case .string(let text): string(text)
        case .array(let items):
            arrayStart()
            for item in items { node(item, sortedKeys: sortedKeys) }
            arrayEnd()
        case .object(let members):
            objectStart()
            let ordered = sortedKeys ? members.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) } : members
            for member in ordered {
                key(member.key)
                node(member.value, sortedKeys: sortedKeys)
            }
            objectEnd()
        }
    }

    // MARK: - Fields

    public mutating func field(_ name: StaticString, _ value: String) {
        key(name)
        string(value)
    }

    public mutating func field(_ name: StaticString, _ value: Bool) {
        key(name)
        bool(value)
    }

    public mutating func field(_ name: StaticString, _ value: Int) {
        key(name)
        int(value)
    }

    public mutating func field<Value: RawRepresentable>(_ name: StaticString, _ value: Value) where Value.RawValue == String {
        key(name)
        string(value.rawValue)
    }

    /// Writes the field only when the value is present, as `encodeIfPresent` does.
    public mutating func fieldIfPresent(_ name: StaticString, _ value: String?) {
        if let value { field(name, value) }
    }

    public mutating func fieldIfPresent(_ name: StaticString, _ value: Bool?) {
        if let value { field(name, value) }
    }

    public mutating func fieldIfPresent(_ name: StaticString, _ value: Int?) {
        if let value { field(name, value) }
    }

    public mutating func fieldIfPresent<Value: RawRepresentable>(_ name: StaticString, _ value: Value?) where Value.RawValue == String {
        if let value { field(name, value) }
    }

    public mutating func field(_ name: StaticString, strings values: [String]) {
        key(name)
        arrayStart()
        for value in values { string(value) }
        arrayEnd()
    }
}
