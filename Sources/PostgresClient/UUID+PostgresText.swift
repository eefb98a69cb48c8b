import Foundation

/// The text form of `uuid`, by hand: Foundation's `UUID(uuidString:)` parses through `sscanf`
/// and `uuidString` formats through `snprintf`, which a replay profile found at 8% of its time,
/// and the batch reader's fast path a measurable share of a one-event append. PostgreSQL's text
/// form of a `uuid` is the canonical one, so this is the product's one parser of it: the
/// database's columns and NOTIFY payloads, and the ids clients send (`EventBatch.read`, in the
/// HTTP layer, which imports this module; the domain, which cannot, never parses one by hand).
extension UUID {
    /// Parses the canonical 8-4-4-4-12 form, in either case, as `UUID(uuidString:)` does; nil
    /// for anything else.
    public init?(postgresUUIDText text: String) {
        var text = text
        let parsed: uuid_t? = text.withUTF8 { bytes -> uuid_t? in
            guard bytes.count == 36 else { return nil }
            var raw: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
            var index = 0
            let ok = withUnsafeMutableBytes(of: &raw) { out -> Bool in
                for offset in 0..<16 {
                    if index == 8 || index == 13 || index == 18 || index == 23 {
                        guard bytes[index] == UInt8(ascii: "-") else { return false }
                        index += 1
                    }
                    let high = Self.hexValues[Int(bytes[index])], low = Self.hexValues[Int(bytes[index + 1])]
                    guard high | low < 0x10 else { return false }
                    out[offset] = high << 4 | low
                    index += 2
                }
                return true
            }
            return ok ? raw : nil
        }
        guard let parsed else { return nil }
        self.init(uuid: parsed)
    }

    /// Each byte's value as a hex digit, 0xFF for a byte that is not one.
    private static let hexValues: [UInt8] = (0...255).map { byte in
        switch UInt8(byte) {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt8(byte) - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): UInt8(byte) - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): UInt8(byte) - UInt8(ascii: "A") + 10
        default: 0xFF
        }
    }

    /// The lowercase 8-4-4-4-12 form, as PostgreSQL writes it and the API shows it.
    public var lowercasedText: String { text(digits: "0123456789abcdef") }

    /// The uppercase form, which `uuidString` gives, without `snprintf`.
    public var uppercasedText: String { text(digits: "0123456789ABCDEF") }

    private func text(digits: StaticString) -> String {
        return withUnsafeBytes(of: uuid) { raw in
            String(unsafeUninitializedCapacity: 36) { out in
                var index = 0
                for offset in 0..<16 {
                    if offset == 4 || offset == 6 || offset == 8 || offset == 10 {
                        out[index] = UInt8(ascii: "-")
                        index += 1
                    }
                    out[index] = digits.utf8Start[Int(raw[offset] >> 4)]
                    out[index + 1] = digits.utf8Start[Int(raw[offset] & 0xF)]
                    index += 2
                }
                return 36
            }
        }
    }
}
