/// CRC-32 (IEEE 802.3, the zlib and PNG one: reflected polynomial 0xEDB88320).
///
/// The queue's records carry it so that a record torn by a crash, or bytes the file system
/// made up after one (ext4 and APFS may show zeros past the last synced write), are told apart
/// from a record that was written whole. It is a checksum against accidents, not an
/// authenticator.
enum CRC32 {
    /// One entry per byte value, computed once.
    static let table: [UInt32] = (0..<256).map { (index: Int) -> UInt32 in
        var value = UInt32(index)
        for _ in 0..<8 {
            value = value & 1 == 1 ? 0xEDB8_8320 ^ (value >> 1) : value >> 1
        }
        return value
    }

    /// The checksum of `bytes`; `checksum("123456789".utf8)` is 0xCBF43926.
    static func checksum(_ bytes: some Sequence<UInt8>) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            let index = Int((crc ^ UInt32(byte)) & 0xFF)
            crc = table[index] ^ (crc >> 8)
        }
        return crc ^ 0xFFFF_FFFF
    }
}
