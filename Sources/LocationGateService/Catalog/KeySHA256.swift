/// SHA-256 (FIPS 180-4) of a short text, in the four words `KeyDigest` holds.
///
/// Every request with a key hashes it (`KeyDigest`): the known-keys cache is keyed by the hash
/// so that the process holds no key's text beyond its request. swift-crypto's `SHA256` is
/// correct but, for a 46-byte key, spends nine tenths of its time around the compression
/// (its context is a class, allocated for the hash and again for `finalize`'s copy):
/// `Labs/gate-cpu` measured 1.36 µs per gate in `KeyDigest` of which 0.11 µs in the
/// compression itself. This one works on the stack: the message in 64-byte blocks, the
/// schedule in a temporary allocation. `KeySHA256Tests` checks it against swift-crypto on
/// every length up to a few blocks.
enum KeySHA256 {
    /// The digest: its 32 bytes in order in the words' memory (`withUnsafeBytes(of:)` of the
    /// four words is the digest).
    static func hash(_ message: UnsafeRawBufferPointer) -> (UInt64, UInt64, UInt64, UInt64) {
        var state: (UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32) = (
            0x6a09_e667, 0xbb67_ae85, 0x3c6e_f372, 0xa54f_f53a, 0x510e_527f, 0x9b05_688c, 0x1f83_d9ab, 0x5be0_cd19
        )
        let count = message.count
        // The message, a 0x80 byte, zeros, and its length in bits as 8 big-endian bytes.
        let blocks = (count + 9 + 63) / 64
        return withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 64) { schedule in
            withUnsafeTemporaryAllocation(byteCount: 64, alignment: 8) { block in
                for index in 0..<blocks {
                    let start = index * 64
                    block.initializeMemory(as: UInt8.self, repeating: 0)
                    if start < count {
                        let end = min(start + 64, count)
                        block.copyMemory(from: UnsafeRawBufferPointer(rebasing: message[start..<end]))
                    }
                    if start <= count, count < start + 64 { block[count - start] = 0x80 }
                    if index == blocks - 1 {
                        block.storeBytes(of: (UInt64(count) &* 8).bigEndian, toByteOffset: 56, as: UInt64.self)
                    }
                    compress(&state, block: UnsafeRawBufferPointer(block), schedule: schedule)
                }
            }
            var words: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
            withUnsafeMutableBytes(of: &words) { digest in
                withUnsafeBytes(of: state) { words in
                    for i in 0..<8 {
                        digest.storeBytes(of: words.load(fromByteOffset: 4 * i, as: UInt32.self).bigEndian, toByteOffset: 4 * i, as: UInt32.self)
                    }
                }
            }
            return words
        }
    }

    private static func compress(
        _ state: inout (UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32),
        block: UnsafeRawBufferPointer, schedule w: UnsafeMutableBufferPointer<UInt32>
    ) {
        for i in 0..<16 {
            w[i] = UInt32(bigEndian: block.loadUnaligned(fromByteOffset: 4 * i, as: UInt32.self))
        }
        for i in 16..<64 {
            let s0 = rotate(w[i - 15], 7) ^ rotate(w[i - 15], 18) ^ (w[i - 15] >> 3)
            let s1 = rotate(w[i - 2], 17) ^ rotate(w[i - 2], 19) ^ (w[i - 2] >> 10)
            w[i] = w[i - 16] &+ s0 &+ w[i - 7] &+ s1
        }
        var (a, b, c, d, e, f, g, h) = state
        roundConstants.withUnsafeBufferPointer { k in
            for i in 0..<64 {
                let t1 = h &+ (rotate(e, 6) ^ rotate(e, 11) ^ rotate(e, 25)) &+ ((e & f) ^ (~e & g)) &+ k[i] &+ w[i]
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
        }
        state = (state.0 &+ a, state.1 &+ b, state.2 &+ c, state.3 &+ d, state.4 &+ e, state.5 &+ f, state.6 &+ g, state.7 &+ h)
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
