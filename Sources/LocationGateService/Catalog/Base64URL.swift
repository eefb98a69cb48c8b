import Foundation

/// Base64url without padding (RFC 4648 §5): the alphabet of API keys, token secrets,
/// dashboard session ids and JWT segments.
enum Base64URL {
    static func encode(_ data: Data) -> String {
        data.base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// Nil when `text` is empty or holds a byte outside the alphabet.
    static func decode(_ text: Substring) -> Data? {
        guard !text.isEmpty, isAlphabet(text.utf8) else { return nil }
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        return Data(base64Encoded: base64)
    }

    /// Every byte is one of `A-Z a-z 0-9 - _`.
    static func isAlphabet(_ bytes: some Sequence<UInt8>) -> Bool {
        bytes.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"):
                true
            default:
                false
            }
        }
    }

    /// 256 bits of `SystemRandomNumberGenerator`: 43 characters.
    static func random() -> String {
        var generator = SystemRandomNumberGenerator()
        return encode(Data((0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }))
    }
}
