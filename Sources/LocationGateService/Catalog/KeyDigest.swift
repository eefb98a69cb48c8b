/// A key's SHA-256 as the known-keys cache holds it: four words, hashed and compared as 32
/// bytes. The database and the revocation notices carry its hex text (`hex`); the cache needs
/// no text, so that authenticating a cached key allocates nothing for its digest.
struct KeyDigest: Hashable, Sendable {
    static let byteCount = 32
    private var words: (UInt64, UInt64, UInt64, UInt64)

    /// The digest of a key's text.
    init(of key: String) {
        var key = key
        self = key.withUTF8 { KeyDigest(ofBytes: UnsafeRawBufferPointer($0)) }
    }

    /// The digest of a key's UTF-8 bytes (`KeySHA256`).
    init(ofBytes bytes: UnsafeRawBufferPointer) {
        words = KeySHA256.hash(bytes)
    }

    /// The digest of its 64 lower-case hex digits, as `hex` writes them; nil for other text.
    init?(hex: String) {
        let digits = Array(hex.utf8)
        guard digits.count == 2 * Self.byteCount else { return nil }
        func value(_ digit: UInt8) -> UInt8? {
            switch digit {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
            default: nil
            }
        }
        var words: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        let parsed = withUnsafeMutableBytes(of: &words) { bytes -> Bool in
            for index in 0..<Self.byteCount {
                guard let high = value(digits[2 * index]), let low = value(digits[2 * index + 1]) else { return false }
                bytes[index] = high << 4 | low
            }
            return true
        }
        guard parsed else { return nil }
        self.words = words
    }

    /// Its 64 lower-case hex digits, written in place.
    var hex: String {
        withUnsafeBytes(of: words) { bytes in
            String(unsafeUninitializedCapacity: 2 * Self.byteCount) { hex in
                func digit(_ value: UInt8) -> UInt8 { value < 10 ? UInt8(ascii: "0") + value : UInt8(ascii: "a") + value - 10 }
                for (index, byte) in bytes.enumerated() {
                    hex[2 * index] = digit(byte >> 4)
                    hex[2 * index + 1] = digit(byte & 0x0F)
                }
                return 2 * Self.byteCount
            }
        }
    }

    static func == (lhs: KeyDigest, rhs: KeyDigest) -> Bool {
        lhs.words.0 == rhs.words.0 && lhs.words.1 == rhs.words.1 && lhs.words.2 == rhs.words.2 && lhs.words.3 == rhs.words.3
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(words.0)
        hasher.combine(words.1)
        hasher.combine(words.2)
        hasher.combine(words.3)
    }
}
