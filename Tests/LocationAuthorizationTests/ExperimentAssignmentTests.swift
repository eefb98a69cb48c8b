import Foundation
import Testing

@testable import LocationAuthorization

/// SPEC §16 "Assignment": a unit's bucket is the first 8 bytes of SHA-256("APPID:KEY:UNIT"),
/// big-endian, modulo 10,000, and the variants take consecutive ranges of weight × 100 buckets.
/// The expected digests are FIPS 180-4's published vectors (the same as `sha256sum` prints);
/// the expected buckets were computed in a shell:
/// `printf %s 'APPID:KEY:UNIT' | sha256sum | cut -c1-16`, then that hex number mod 10000.
@Suite("Experiments: SHA-256 and assignment", .timeLimit(.minutes(1)))
struct ExperimentAssignmentTests {
    static let appID = "0b3f5c6e-1111-4222-8333-444455556666"

    func hex(_ bytes: [UInt8]) -> String {
        bytes.map { byte in
            let digits = String(byte, radix: 16)
            return digits.count == 1 ? "0" + digits : digits
        }.joined()
    }

    @Test("SHA-256 of FIPS 180-4's vectors and the padding's boundaries", arguments: [
        ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        // Two blocks: 448 bits, so the padding needs a block of its own.
        ("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"),
        (String(repeating: "a", count: 55), "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318"),
        (String(repeating: "a", count: 56), "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a"),
        (String(repeating: "a", count: 64), "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb"),
        // UTF-8, not UTF-16 or characters.
        ("héllo", "3c48591d8d098a4538f5e013dfcf406e948eac4d3277b10bf614e295d6068179"),
    ])
    func vectors(text: String, digest: String) {
        #expect(hex(SHA256Hasher.hash(text)) == digest)
    }

    @Test("SHA-256 of a million 'a's (FIPS 180-4's long vector), fed in uneven pieces")
    func millionAs() {
        var hasher = SHA256Hasher()
        var remaining = 1_000_000
        var piece = 1
        while remaining > 0 {
            let count = min(piece, remaining)
            hasher.update(repeatElement(UInt8(ascii: "a"), count: count))
            remaining -= count
            piece = piece % 997 + 13
        }
        #expect(hex(hasher.finalize()) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    @Test("A hasher copied after a prefix gives the whole text's digest; finalize leaves it usable")
    func prefixCopy() {
        var prefix = SHA256Hasher()
        prefix.update("\(Self.appID):onboarding-primer:".utf8)
        var first = prefix
        first.update("device:u-1/d-1".utf8)
        var second = prefix
        second.update("install:abc".utf8)
        #expect(first.finalize() == SHA256Hasher.hash("\(Self.appID):onboarding-primer:device:u-1/d-1"))
        #expect(second.finalize() == SHA256Hasher.hash("\(Self.appID):onboarding-primer:install:abc"))
        #expect(first.finalize() == first.finalize())
    }

    @Test("Buckets as a shell computes them")
    func shellBuckets() {
        #expect(ExperimentBuckets.bucket(ofDigest: SHA256Hasher.hash("APPID:KEY:UNIT")) == 7902)  // cf62d2c13f5957be
        let buckets = ExperimentBuckets(
            appIDText: Self.appID, key: "onboarding-primer",
            variants: [ExperimentVariant(key: "dialog", weight: 50), ExperimentVariant(key: "primer", weight: 50)])
        #expect(buckets.bucket(of: .install("5E3C1F0A-ABCD")) == 1930)  // 6435f75e2c23b2ea
        #expect(buckets.bucket(of: .device(userID: "user-42", deviceID: "phone-1")) == 1036)  // eed49185878e61cc
        #expect(buckets.variant(for: .install("5E3C1F0A-ABCD")) == "dialog")
    }

    @Test("The app id is written as the API writes it: lower case")
    func appIDText() throws {
        let definition = try ExperimentDefinition(
            key: "onboarding-primer", prompt: .one(.whenInUse),
            variants: [ExperimentVariant(key: "dialog", weight: 50), ExperimentVariant(key: "primer", weight: 50)])
        let appID = try #require(UUID(uuidString: Self.appID.uppercased()))
        #expect(ExperimentBuckets(appID: appID, definition: definition).bucket(of: .install("5E3C1F0A-ABCD")) == 1930)
    }

    @Test("Variants take consecutive ranges of weight × 100 buckets in listed order; weight 0 takes none")
    func ranges() {
        let variants = [
            ExperimentVariant(key: "a", weight: 20), ExperimentVariant(key: "b", weight: 0), ExperimentVariant(key: "c", weight: 80),
        ]
        #expect(ExperimentBuckets.variant(inBucket: 0, of: variants) == "a")
        #expect(ExperimentBuckets.variant(inBucket: 1999, of: variants) == "a")
        #expect(ExperimentBuckets.variant(inBucket: 2000, of: variants) == "c")
        #expect(ExperimentBuckets.variant(inBucket: 9999, of: variants) == "c")
        let even = [ExperimentVariant(key: "x", weight: 50), ExperimentVariant(key: "y", weight: 50)]
        #expect(ExperimentBuckets.variant(inBucket: 4999, of: even) == "x")
        #expect(ExperimentBuckets.variant(inBucket: 5000, of: even) == "y")
    }

    @Test("10,000 units share out as Python's hashlib shares them (20/30/50: 2076, 2963, 4961)")
    func shares() {
        let buckets = ExperimentBuckets(
            appIDText: Self.appID, key: "onboarding-primer",
            variants: [
                ExperimentVariant(key: "a", weight: 20), ExperimentVariant(key: "b", weight: 30), ExperimentVariant(key: "c", weight: 50),
            ])
        var counts: [String: Int] = [:]
        for index in 0..<10_000 {
            counts[buckets.variant(for: .device(userID: "user-\(index)", deviceID: "phone")), default: 0] += 1
        }
        #expect(counts == ["a": 2076, "b": 2963, "c": 4961])
    }

    @Test("A unit's text, read back, and the units a device's exposure may be filed under")
    func units() {
        #expect(ExperimentUnit.install("i-1").text == "install:i-1")
        #expect(ExperimentUnit.device(userID: "u-1", deviceID: "d-1").text == "device:u-1/d-1")
        for unit in [ExperimentUnit.install("i:1/2"), .device(userID: "u@x", deviceID: "d.1")] {
            #expect(ExperimentUnit(text: unit.text) == unit)
        }
        #expect(ExperimentUnit(text: "install:") == nil)
        #expect(ExperimentUnit(text: "device:u-1") == nil)
        #expect(ExperimentUnit(text: "person:u-1") == nil)

        var state = DeviceState()
        #expect(ExperimentUnit(state: state, userID: "u-1", deviceID: "d-1") == .device(userID: "u-1", deviceID: "d-1"))
        #expect(ExperimentUnit.candidates(state: state, userID: "u-1", deviceID: "d-1") == [.device(userID: "u-1", deviceID: "d-1")])
        state.installID = "i-1"
        #expect(ExperimentUnit(state: state, userID: "u-1", deviceID: "d-1") == .install("i-1"))
        #expect(
            ExperimentUnit.candidates(state: state, userID: "u-1", deviceID: "d-1")
                == [.device(userID: "u-1", deviceID: "d-1"), .install("i-1")])
    }
}
