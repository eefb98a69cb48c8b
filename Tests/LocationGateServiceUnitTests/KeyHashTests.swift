import Crypto
import Testing

@testable import LocationGateService

/// Keys are stored and looked up by the hex SHA-256 of their text (`api_keys.key_hash`): the
/// form must never change, or every stored key stops matching.
@Suite("Key hashes")
struct KeyHashTests {
    @Test("The hex SHA-256 of the key's UTF-8 text, lower case", arguments: [
        ("lg_abc", "7fbd944c7d1295374fc7a9f469fbb18511e5a66521811e89e7fb9ead0d03b53a"),
        ("lg_" + String(repeating: "A", count: 43), "c5490907ece2dc17c86b531883b0e3c41c1ca24c290afc6299a8c752089b349b"),
        ("lg_é", "86211497e04e08c4db8250c783b9491908545e2ad7bdb1132b9f536598ff088a"),
        ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
    ])
    func hexSHA256(key: String, hash: String) {
        #expect(APIKeys.hash(key) == hash)
    }
}

/// The known-keys cache holds a key's digest as four words; revocation notices carry its hex.
@Suite("Key digests")
struct KeyDigestTests {
    @Test("A digest read back from its hex is the key's digest, with its hash", arguments: ["lg_abc", "", "lg_é"])
    func hexRoundTrip(key: String) throws {
        let digest = KeyDigest(of: key)
        let read = try #require(KeyDigest(hex: digest.hex))
        #expect(read == digest)
        #expect(read.hashValue == digest.hashValue)
        #expect(KeyDigest(of: key + "x") != digest)
    }

    @Test("Text that is not 64 lower-case hex digits is no digest", arguments: [
        "", "abc", String(repeating: "0", count: 63), String(repeating: "0", count: 65),
        String(repeating: "A", count: 64), String(repeating: "0", count: 63) + "g",
    ])
    func notHex(text: String) {
        #expect(KeyDigest(hex: text) == nil)
    }
}

/// `KeySHA256` is SHA-256: the same digest as swift-crypto's on every length across the
/// padding's boundaries (55, 56, 64 bytes) and over several blocks.
@Suite("Key SHA-256")
struct KeySHA256Tests {
    @Test("The digest of 0 to 200 bytes is swift-crypto's")
    func matchesSwiftCrypto() {
        var generator = SystemRandomNumberGenerator()
        for count in 0...200 {
            let bytes = (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let expected = Array(SHA256.hash(data: bytes))
            let words = bytes.withUnsafeBytes { KeySHA256.hash($0) }
            let actual = withUnsafeBytes(of: words) { Array($0) }
            #expect(actual == expected, "\(count) bytes")
        }
    }
}
