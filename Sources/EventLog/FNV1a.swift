/// FNV-1a, 64 bits: a fast, stable hash for identifiers that need no cryptographic strength
/// (advisory-lock keys, migration checksums, ETags). Stable across processes and releases,
/// unlike `Hasher`.
public enum FNV1a {
    public static func hash(_ bytes: some Sequence<UInt8>) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        return hash
    }
}
