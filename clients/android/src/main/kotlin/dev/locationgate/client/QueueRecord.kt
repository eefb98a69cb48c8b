package dev.locationgate.client

import java.util.UUID
import java.util.zip.CRC32

/**
 * The framing of both queue files, the same as the Swift client's: each record is a 4-byte
 * big-endian payload length, a 4-byte big-endian CRC-32 (IEEE, as zlib) of the payload, then
 * the payload.
 *
 * Records are only ever appended, so a crash can leave at most one damaged record, at the end.
 * Reading stops at the first record that is short, too long, empty or fails its checksum; what
 * precedes it is exactly what was written whole. Empty payloads are refused on purpose: eight
 * zero bytes (a length of 0 and the CRC of nothing, also 0) are what a file system may show for
 * blocks it allocated but never wrote.
 */
internal object QueueRecord {
    const val HEADER_SIZE = 8
    /** No event comes near this; a larger length is damage, not data. */
    const val MAX_PAYLOAD = 1 shl 20
    /** An acknowledged id: the UUID's 16 bytes, most significant first. */
    const val ID_SIZE = 16

    fun crc32(bytes: ByteArray, offset: Int = 0, length: Int = bytes.size): Long {
        val crc = CRC32()
        crc.update(bytes, offset, length)
        return crc.value
    }

    fun frame(payload: ByteArray): ByteArray {
        val record = ByteArray(HEADER_SIZE + payload.size)
        putInt(record, 0, payload.size.toLong())
        putInt(record, 4, crc32(payload))
        System.arraycopy(payload, 0, record, HEADER_SIZE, payload.size)
        return record
    }

    /** The payloads of the whole records at the start of `data`, and how many bytes they cover. */
    class Scan(val payloads: List<ByteArray>, val validLength: Int)

    fun scan(data: ByteArray): Scan {
        val payloads = ArrayList<ByteArray>()
        var offset = 0
        while (data.size - offset >= HEADER_SIZE) {
            val length = getInt(data, offset)
            val checksum = getInt(data, offset + 4)
            if (length < 1 || length > MAX_PAYLOAD || data.size - offset - HEADER_SIZE < length) break
            val start = offset + HEADER_SIZE
            if (crc32(data, start, length.toInt()) != checksum) break
            payloads.add(data.copyOfRange(start, start + length.toInt()))
            offset = start + length.toInt()
        }
        return Scan(payloads, offset)
    }

    fun idsPayload(ids: List<String>): ByteArray {
        val payload = ByteArray(ids.size * ID_SIZE)
        ids.forEachIndexed { position, id ->
            val uuid = UUID.fromString(id)
            putLong(payload, position * ID_SIZE, uuid.mostSignificantBits)
            putLong(payload, position * ID_SIZE + 8, uuid.leastSignificantBits)
        }
        return payload
    }

    /** The ids of an acknowledgement payload (lower case), or null when its length is not a multiple of 16. */
    fun ids(payload: ByteArray): List<String>? {
        if (payload.size % ID_SIZE != 0) return null
        return (0 until payload.size / ID_SIZE).map { position ->
            UUID(getLong(payload, position * ID_SIZE), getLong(payload, position * ID_SIZE + 8)).toString()
        }
    }

    private fun putInt(target: ByteArray, offset: Int, value: Long) {
        for (i in 0 until 4) target[offset + i] = (value ushr (24 - 8 * i)).toByte()
    }

    private fun getInt(source: ByteArray, offset: Int): Long {
        var value = 0L
        for (i in 0 until 4) value = (value shl 8) or (source[offset + i].toLong() and 0xFF)
        return value
    }

    private fun putLong(target: ByteArray, offset: Int, value: Long) {
        for (i in 0 until 8) target[offset + i] = (value ushr (56 - 8 * i)).toByte()
    }

    private fun getLong(source: ByteArray, offset: Int): Long {
        var value = 0L
        for (i in 0 until 8) value = (value shl 8) or (source[offset + i].toLong() and 0xFF)
        return value
    }
}
