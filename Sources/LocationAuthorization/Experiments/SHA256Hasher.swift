/// SHA-256 (FIPS 180-4), fed in pieces: what an experiment's assignment hashes (SPEC §16,
/// `ExperimentBuckets`).
///
/// Written out here because the domain depends on nothing but Foundation: swift-crypto is the
/// service's, and apps that link `LocationGateClient` (which builds on this target) should be
/// able to make the same assignment without it. Named apart from swift-crypto's `SHA256`, so
/// that a file importing both modules can name either. Fed in pieces so that an experiment's
/// `APPID:KEY:` prefix is hashed once and each unit adds only its own bytes to a copy.
public struct SHA256Hasher: Sendable, Hashable {
    /// The eight working words, H0 to H7.
    private var state: [UInt32] = [
        0x6a09_e667, 0xbb67_ae85, 0x3c6e_f372, 0xa54f_f53a, 0x510e_527f, 0x9b05_688c, 0x1f83_d9ab, 0x5be0_cd19,
    ]
    /// Bytes fed that do not fill a 64-byte block yet.
    private var pending: [UInt8] = []
    /// Bytes fed in all.
    private var count: UInt64 = 0

    public init() {}

    /// The digest of `bytes`, 32 bytes.
    public static func hash<Bytes: Sequence>(_ bytes: Bytes) -> [UInt8] where Bytes.Element == UInt8 {
        var hasher = SHA256Hasher()
        hasher.update(bytes)
        return hasher.finalize()
    }

    /// The digest of `text`'s UTF-8 bytes.
    public static func hash(_ text: String) -> [UInt8] {
        hash(text.utf8)
    }

    /// Adds bytes to the message.
    public mutating func update<Bytes: Sequence>(_ bytes: Bytes) where Bytes.Element == UInt8 {
        for byte in bytes {
            pending.append(byte)
            count &+= 1
            if pending.count == 64 {
                Self.compress(&state, block: pending)
                pending.removeAll(keepingCapacity: true)
            }
        }
    }

    /// The digest of everything fed: the message, a 0x80 byte, zeros to 56 bytes of a block,
    /// and the message's length in bits as 8 big-endian bytes.
    public func finalize() -> [UInt8] {
        var words = state
        var tail = pending
        tail.append(0x80)
        if tail.count > 56 {
            tail.append(contentsOf: repeatElement(0, count: 64 - tail.count))
            Self.compress(&words, block: tail)
            tail.removeAll(keepingCapacity: true)
        }
        tail.append(contentsOf: repeatElement(0, count: 56 - tail.count))
        let bits = count &* 8
        for shift in stride(from: 56, through: 0, by: -8) {
            tail.append(UInt8(truncatingIfNeeded: bits >> UInt64(shift)))
        }
        Self.compress(&words, block: tail)
        var digest: [UInt8] = []
        digest.reserveCapacity(32)
        for word in words {
            digest.append(UInt8(truncatingIfNeeded: word >> 24))
            digest.append(UInt8(truncatingIfNeeded: word >> 16))
            digest.append(UInt8(truncatingIfNeeded: word >> 8))
            digest.append(UInt8(truncatingIfNeeded: word))
        }
        return digest
    }

    /// One 64-byte block into the state (FIPS 180-4 §6.2.2).
    private static func compress(_ state: inout [UInt32], block: [UInt8]) {
        var w = [UInt32](repeating: 0, count: 64)
        for i in 0..<16 {
            var word: UInt32 = 0
            for byte in block[(4 * i)..<(4 * i + 4)] { word = word << 8 | UInt32(byte) }
            w[i] = word
        }
        for i in 16..<64 {
            let s0 = rotate(w[i - 15], 7) ^ rotate(w[i - 15], 18) ^ (w[i - 15] >> 3)
            let s1 = rotate(w[i - 2], 17) ^ rotate(w[i - 2], 19) ^ (w[i - 2] >> 10)
            w[i] = w[i - 16] &+ s0 &+ w[i - 7] &+ s1
        }
        var a = state[0], b = state[1], c = state[2], d = state[3]
        var e = state[4], f = state[5], g = state[6], h = state[7]
        for i in 0..<64 {
            let t1 = h &+ (rotate(e, 6) ^ rotate(e, 11) ^ rotate(e, 25)) &+ ((e & f) ^ (~e & g)) &+ roundConstants[i] &+ w[i]
            let t2 = (rotate(a, 2) ^ rotate(a, 13) ^ rotate(a, 22)) &+ ((a & b) ^ (a & c) ^ (b & c))
            h = g
            g = f
            f = e
            e = d &+ t1
            d = c
            c = b
            b = a
            a = t1 &+ t2
        }
        state[0] &+= a
        state[1] &+= b
        state[2] &+= c
        state[3] &+= d
        state[4] &+= e
        state[5] &+= f
        state[6] &+= g
        state[7] &+= h
    }

    @inline(__always)
    private static func rotate(_ x: UInt32, _ n: UInt32) -> UInt32 { x >> n | x << (32 - n) }

    private static let roundConstants: [UInt32] = [
        0x428a_2f98, 0x7137_4491, 0xb5c0_fbcf, 0xe9b5_dba5, 0x3956_c25b, 0x59f1_11f1, 0x923f_82a4, 0xab1c_5ed5,
        0xd807_aa98, 0x1283_5b01, 0x2431_85be, 0x550c_7dc3, 0x72be_5d74, 0x80de_b1fe, 0x9bdc_06a7, 0xc19b_f174,
        0xe49b_69c1, 0xefbe_4786, 0x0fc1_9dc6, 0x240c_a1cc, 0x2de9_2c6f, 0x4a74_84aa, 0x5cb0_a9dc, 0x76f9_88da,
        0x983e_5152, 0xa831_c66d, 0xb003_27c8, 0xbf59_7fc7, 0xc6e0_0bf3, 0xd5a7_9147, 0x06ca_6351, 0x1429_2967,
        0x27b7_0a85, 0x2e1b_2138, 0x4d2c_6dfc, 0x5338_0d13, 0x650a_7354, 0x766a_0abb, 0x81c2_c92e, 0x9272_2c85,
        0xa2bf_e8a1, 0xa81a_664b, 0xc24b_8b70, 0xc76c_51a3, 0xd192_e819, 0xd699_0624, 0xf40e_3585, 0x106a_a070,
        0x19a4_c116, 0x1e37_6c08, 0x2748_774c, 0x34b0_bcb5, 0x391c_0cb3, 0x4ed8_aa4a, 0x5b9c_ca4f, 0x682e_6ff3,
        0x748f_82ee, 0x78a5_636f, 0x84c8_7814, 0x8cc7_0208, 0x90be_fffa, 0xa450_6ceb, 0xbef9_a3f7, 0xc671_78f2,
    ]
}
