import Foundation

/// A UUID's text by hand, for the batch reader's fast path: Foundation's `UUID(uuidString:)`
/// was a measurable share of a one-event append. (PostgreSQL's text form of a `uuid`, the same
/// characters, is the database client's own, `UUID(postgresUUIDText:)`: that layer depends on
/// nothing of the domain.)
extension UUID {
    /// Parses the canonical 8-4-4-4-12 form, in either case, as `UUID(uuidString:)` does; nil
    /// for anything else.
    public init?(canonicalText text: String) {
        var text = text
        let parsed: uuid_t? = text.withUTF8 { bytes -> uuid_t? in
            guard bytes.count == 36 else { return nil }
            var raw: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
            var index = 0
            let parsedAll = withUnsafeMutableBytes(of: &raw) { out -> Bool in
                for offset in 0..<16 {
                    if index == 8 || index == 13 || index == 18 || index == 23 {
                        guard bytes[index] == UInt8(ascii: "-") else { return false }
                        index += 1
                    }
                    guard let high = Self.hexValue(bytes[index]), let low = Self.hexValue(bytes[index + 1]) else { return false }
                    out[offset] = high << 4 | low
                    index += 2
                }
                return true
            }
            return parsedAll ? raw : nil
        }
        guard let parsed else { return nil }
        self.init(uuid: parsed)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
