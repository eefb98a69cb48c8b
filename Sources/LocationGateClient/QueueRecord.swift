import Foundation

/// The framing of both queue files: each record is a 4-byte big-endian payload length, a 4-byte
/// big-endian CRC-32 of the payload, then the payload.
///
/// Records are only ever appended, so a crash can leave at most one damaged record, at the end.
/// Reading stops at the first record that is short, too long, empty or fails its checksum; what
/// precedes it is exactly what was written whole. Empty payloads are refused on purpose: eight
/// zero bytes (a length of 0 and the CRC of nothing, also 0) are what a file system shows for
/// blocks it allocated but never wrote.
enum QueueRecord {
    /// Length and checksum.
    static let headerSize = 8
    /// No event comes near this; a larger length is damage, not data.
    static let maxPayload = 1 << 20

    /// The framed record of `payload`.
    static func frame(_ payload: Data) -> Data {
        var record = Data(capacity: headerSize + payload.count)
        appendBigEndian(UInt32(payload.count), to: &record)
        appendBigEndian(CRC32.checksum(payload), to: &record)
        record.append(payload)
        return record
    }

    /// The payloads of the whole records at the start of `data`, and how many bytes they cover:
    /// the length the file should be cut back to.
    static func scan(_ data: Data) -> (payloads: [Data], validLength: Int) {
        let bytes = [UInt8](data)
        var payloads: [Data] = []
        var offset = 0
        while bytes.count - offset >= headerSize {
            let length = Int(readBigEndian(bytes, at: offset))
            let checksum = readBigEndian(bytes, at: offset + 4)
            guard length >= 1, length <= maxPayload, bytes.count - offset - headerSize >= length else { break }
            let start = offset + headerSize
            let payload = bytes[start..<(start + length)]
            guard CRC32.checksum(payload) == checksum else { break }
            payloads.append(Data(payload))
            offset = start + length
        }
        return (payloads, offset)
    }

    // MARK: - Acknowledgement payloads

    /// The size of one id in an acknowledgement record: the UUID's 16 raw bytes.
    static let idSize = 16

    /// One acknowledgement record's payload: the ids, 16 raw bytes each.
    static func idsPayload(_ ids: [UUID]) -> Data {
        var payload = Data(capacity: ids.count * idSize)
        for id in ids {
            withUnsafeBytes(of: id.uuid) { raw in payload.append(contentsOf: raw) }
        }
        return payload
    }

    /// The ids of an acknowledgement payload, or nil when its length is not a multiple of 16.
    static func ids(in payload: Data) -> [UUID]? {
        guard payload.count % idSize == 0 else { return nil }
        let bytes = [UInt8](payload)
        var ids: [UUID] = []
        ids.reserveCapacity(bytes.count / idSize)
        var offset = 0
        while offset < bytes.count {
            let b = Array(bytes[offset..<(offset + idSize)])
            ids.append(UUID(uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7],
                                   b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15])))
            offset += idSize
        }
        return ids
    }

    // MARK: - Big-endian integers

    private static func appendBigEndian(_ value: UInt32, to data: inout Data) {
        data.append(UInt8(truncatingIfNeeded: value >> 24))
        data.append(UInt8(truncatingIfNeeded: value >> 16))
        data.append(UInt8(truncatingIfNeeded: value >> 8))
        data.append(UInt8(truncatingIfNeeded: value))
    }

    private static func readBigEndian(_ bytes: [UInt8], at offset: Int) -> UInt32 {
        var value: UInt32 = 0
        for index in offset..<(offset + 4) {
            value = value << 8 | UInt32(bytes[index])
        }
        return value
    }
}
