package dev.locationgate.client

import java.io.File
import java.io.RandomAccessFile

/** EventQueue.kt: durability, crash safety, bounds, locking. */
object EventQueueTests {
    private val events = AndroidEvents("u-1", "d-1", TEST_INSTALL_ID, clock = { 1_700_000_000_000L })

    private fun some(count: Int): List<Event> = (0 until count).map { events.appStateChanged(if (it % 2 == 0) AppState.FOREGROUND else AppState.BACKGROUND) }

    private fun journal(directory: File) = File(directory, EventQueue.JOURNAL_NAME)
    private fun acks(directory: File) = File(directory, EventQueue.ACKS_NAME)

    private fun appendBytes(file: File, bytes: ByteArray) {
        RandomAccessFile(file, "rw").use {
            it.seek(it.length())
            it.write(bytes)
        }
    }

    private fun truncate(file: File, by: Int) {
        RandomAccessFile(file, "rw").use { it.setLength(it.length() - by) }
    }

    private fun upper(text: String) = text.map { if (it in 'a'..'z') it - ('a' - 'A') else it }.joinToString("")

    private fun ids(queue: EventQueue) = queue.peek(Int.MAX_VALUE).map { it.id }

    val cases = listOf(
        TestCase("CRC-32 is the IEEE one: 123456789 gives CBF43926; records are length, CRC, payload, big-endian") {
            expectEqual(QueueRecord.crc32("123456789".toByteArray()), 0xCBF43926L, "crc")
            val record = QueueRecord.frame("abc".toByteArray())
            expectEqual(record.take(4).map { it.toInt() and 0xFF }, listOf(0, 0, 0, 3), "length")
            val crc = QueueRecord.crc32("abc".toByteArray())
            expectEqual(record.drop(4).take(4).map { it.toLong() and 0xFF }, listOf(crc ushr 24, (crc ushr 16) and 0xFF, (crc ushr 8) and 0xFF, crc and 0xFF), "crc bytes")
        },
        TestCase("appended and removed events survive a reopen, in order; the stored JSON is the event's, byte for byte") {
            withTemporaryDirectory { directory ->
                val stored = some(5)
                EventQueue(directory).use { queue ->
                    stored.forEach { queue.append(it) }
                    queue.remove(listOf(stored[1].id, upper(stored[3].id), "00000000-0000-4000-8000-000000000000"))
                    expectEqual(queue.size, 3, "size")
                    expectEqual(queue.peek(2).map { it.id }, listOf(stored[0].id, stored[2].id), "peek(2)")
                }
                EventQueue(directory).use { queue ->
                    expectEqual(queue.peek(10), listOf(stored[0], stored[2], stored[4]), "after a reopen")
                    expectEqual(queue.byteCount, listOf(0, 2, 4).map { 8 + stored[it].json.toByteArray().size }.sum(), "byteCount")
                }
            }
        },
        TestCase("a truncated last record (a crash mid-write) is ignored and cut off; the next append is read back") {
            withTemporaryDirectory { directory ->
                val stored = some(4)
                EventQueue(directory).use { queue -> stored.take(3).forEach { queue.append(it) } }
                val whole = journal(directory).length()
                truncate(journal(directory), 5)
                EventQueue(directory).use { queue ->
                    expectEqual(ids(queue), stored.take(2).map { it.id }, "pending after the torn record")
                    val cut = whole - QueueRecord.HEADER_SIZE - stored[2].json.toByteArray().size
                    expectEqual(journal(directory).length(), cut, "journal cut to its last whole record")
                    queue.append(stored[3])
                }
                EventQueue(directory).use { queue ->
                    expectEqual(ids(queue), listOf(stored[0].id, stored[1].id, stored[3].id), "the record after the cut is read")
                }
            }
        },
        TestCase("a torn header, a failed checksum, zeros the file system made up: reading stops there, before is kept") {
            for ((name, damage) in listOf<Pair<String, (File) -> Unit>>(
                "3 bytes of a header" to { file -> appendBytes(file, byteArrayOf(0, 0, 1)) },
                "a whole header, no payload" to { file -> appendBytes(file, QueueRecord.frame("{}".toByteArray()).copyOf(8)) },
                "8 zero bytes" to { file -> appendBytes(file, ByteArray(8)) },
                "4 KiB of zeros" to { file -> appendBytes(file, ByteArray(4096)) },
                "a length of 2 GiB" to { file -> appendBytes(file, byteArrayOf(0x7F, -1, -1, -1, 0, 0, 0, 0, 1)) },
                "a flipped bit in the last record, its JSON still valid" to { file ->
                    // "u-1" becomes "u-0": only the checksum can tell.
                    val bytes = file.readBytes()
                    val at = String(bytes, Charsets.ISO_8859_1).lastIndexOf("\"u-1\"") + 3
                    bytes[at] = (bytes[at].toInt() xor 0x01).toByte()
                    file.writeBytes(bytes)
                }
            )) {
                withTemporaryDirectory { directory ->
                    val stored = some(3)
                    EventQueue(directory).use { queue -> stored.forEach { queue.append(it) } }
                    damage(journal(directory))
                    val expected = if (name.startsWith("a flipped")) stored.take(2) else stored
                    val whole = expected.map { 8L + it.json.toByteArray().size }.sum()
                    EventQueue(directory).use { queue -> expectEqual(ids(queue), expected.map { it.id }, name) }
                    expectEqual(journal(directory).length(), whole, "$name: the journal cut to its whole records")
                    EventQueue(directory).use { queue -> expectEqual(ids(queue), expected.map { it.id }, "$name, opened twice") }
                }
            }
        },
        TestCase("a record whose checksum holds but whose JSON is not an event is skipped, the records after it kept") {
            withTemporaryDirectory { directory ->
                val stored = some(2)
                EventQueue(directory).use { queue -> queue.append(stored[0]) }
                appendBytes(journal(directory), QueueRecord.frame("{\"future\": true}".toByteArray()))
                EventQueue(directory).use { queue ->
                    expectEqual(ids(queue), listOf(stored[0].id), "pending")
                    queue.append(stored[1])
                }
                EventQueue(directory).use { queue -> expectEqual(ids(queue), stored.map { it.id }, "pending after the skipped record") }
            }
        },
        TestCase("removed events never come back; a torn removal record brings back only what it did not cover") {
            withTemporaryDirectory { directory ->
                val stored = some(4)
                EventQueue(directory).use { queue ->
                    stored.forEach { queue.append(it) }
                    queue.remove(listOf(stored[0].id))
                    queue.remove(listOf(stored[1].id, stored[2].id))
                }
                truncate(acks(directory), 1)
                EventQueue(directory).use { queue ->
                    // The second removal was torn: as if it never happened (the server answers those
                    // two with duplicate when they are sent again). The first holds.
                    expectEqual(ids(queue), stored.drop(1).map { it.id }, "pending")
                    expectEqual(acks(directory).length(), (8 + 16).toLong(), "acknowledgements cut to the whole record")
                }
            }
        },
        TestCase("compaction keeps exactly the pending events, in order, and empties the acknowledgements") {
            withTemporaryDirectory { directory ->
                val stored = some(6)
                EventQueue(directory).use { queue ->
                    stored.forEach { queue.append(it) }
                    queue.remove(stored.filterIndexed { i, _ -> i % 2 == 0 }.map { it.id })
                    val before = journal(directory).length()
                    queue.compact()
                    expect(journal(directory).length() < before) { "the journal did not shrink" }
                    expectEqual(acks(directory).length(), 0L, "acknowledgements emptied")
                    expectEqual(ids(queue), listOf(stored[1].id, stored[3].id, stored[5].id), "pending after compaction")
                    queue.append(stored[0].copy(id = "00000000-0000-4000-8000-00000000aaaa", json = stored[0].json.replace(stored[0].id, "00000000-0000-4000-8000-00000000aaaa")))
                }
                EventQueue(directory).use { queue ->
                    expectEqual(ids(queue), listOf(stored[1].id, stored[3].id, stored[5].id, "00000000-0000-4000-8000-00000000aaaa"), "after a reopen")
                }
            }
        },
        TestCase("a crash between the journal's rename and emptying the acknowledgements loses nothing and brings nothing back") {
            withTemporaryDirectory { directory ->
                val stored = some(4)
                EventQueue(directory).use { queue ->
                    stored.forEach { queue.append(it) }
                    queue.remove(listOf(stored[0].id, stored[2].id))
                    val oldAcks = acks(directory).readBytes()
                    queue.compact()
                    acks(directory).writeBytes(oldAcks)
                }
                EventQueue(directory).use { queue -> expectEqual(ids(queue), listOf(stored[1].id, stored[3].id), "pending") }
            }
        },
        TestCase("a crash before the rename leaves the old journal in force; the half-written new one is deleted") {
            withTemporaryDirectory { directory ->
                val stored = some(3)
                EventQueue(directory).use { queue -> stored.forEach { queue.append(it) } }
                File(directory, EventQueue.COMPACTING_NAME).writeBytes(QueueRecord.frame(stored[0].json.toByteArray()).copyOf(20))
                EventQueue(directory).use { queue ->
                    expectEqual(ids(queue), stored.map { it.id }, "pending")
                    expect(!File(directory, EventQueue.COMPACTING_NAME).exists()) { "the leftover file is still there" }
                }
            }
        },
        TestCase("removals compact by themselves once dead records pass the threshold and are most of the journal") {
            withTemporaryDirectory { directory ->
                val stored = some(10)
                EventQueue(directory, compactionThreshold = 3).use { queue ->
                    stored.forEach { queue.append(it) }
                    queue.remove(stored.take(3).map { it.id })
                    expect(acks(directory).length() > 0) { "compacted too early" }
                    queue.remove(stored.subList(3, 6).map { it.id })
                    expectEqual(acks(directory).length(), 0L, "acknowledgements after the compaction")
                    expectEqual(journal(directory).length(), queue.byteCount.toLong(), "journal holds the pending alone")
                }
                EventQueue(directory).use { queue -> expectEqual(ids(queue), stored.drop(6).map { it.id }, "pending") }
            }
        },
        TestCase("beyond maxEvents an append is refused and stores nothing; removing makes room") {
            withTemporaryDirectory { directory ->
                val stored = some(4)
                EventQueue(directory, maxEvents = 3).use { queue ->
                    stored.take(3).forEach { queue.append(it) }
                    val length = journal(directory).length()
                    expectThrows<EventQueueFullException>("the fourth") { queue.append(stored[3]) }
                    expectEqual(journal(directory).length(), length, "journal unchanged")
                    queue.remove(listOf(stored[0].id))
                    queue.append(stored[3])
                }
                EventQueue(directory, maxEvents = 3).use { queue -> expectEqual(ids(queue), stored.drop(1).map { it.id }, "pending") }
            }
        },
        TestCase("beyond maxBytes an append is refused and stores nothing") {
            withTemporaryDirectory { directory ->
                val stored = some(3)
                val limit = stored.take(2).map { 8 + it.json.toByteArray().size }.sum()
                EventQueue(directory, maxBytes = limit).use { queue ->
                    stored.take(2).forEach { queue.append(it) }
                    expectThrows<EventQueueFullException>("over the bytes") { queue.append(stored[2]) }
                    expectEqual(queue.byteCount, limit, "byteCount")
                }
                EventQueue(directory).use { queue -> expectEqual(queue.size, 2, "size after a reopen") }
            }
        },
        TestCase("ids are idempotency keys: a pending or removed id is refused; a non-UUID id and an oversized event too") {
            withTemporaryDirectory { directory ->
                val stored = some(2)
                EventQueue(directory).use { queue ->
                    stored.forEach { queue.append(it) }
                    expectThrows<DuplicateEventIdException>("pending id") { queue.append(stored[0]) }
                    queue.remove(listOf(stored[0].id))
                    expectThrows<DuplicateEventIdException>("removed id") { queue.append(stored[0]) }
                    expectThrows<IllegalArgumentException>("not a UUID") { queue.append(Event("x", "t", "{}")) }
                    val big = events.custom("appStateChanged", "{\"pad\":\"" + "a".repeat(EventQueue.MAX_EVENT_BYTES) + "\"}")
                    expectThrows<IllegalArgumentException>("over MAX_EVENT_BYTES") { queue.append(big) }
                    expectEqual(queue.size, 1, "size")
                }
            }
        },
        TestCase("one queue per directory: a second is refused, closing releases it, a closed queue refuses changes") {
            withTemporaryDirectory { directory ->
                val first = EventQueue(directory)
                expectThrows<EventQueueLockedException>("a second queue") { EventQueue(directory) }
                first.close()
                expectThrows<EventQueueClosedException>("append after close") { first.append(some(1)[0]) }
                EventQueue(directory).use { it.append(some(1)[0]) }
            }
        },
        TestCase("a queue opens in a directory that does not exist yet") {
            withTemporaryDirectory { directory ->
                val nested = File(directory, "a/b/LocationGate")
                EventQueue(nested).use { it.append(some(1)[0]) }
                EventQueue(nested).use { expectEqual(it.size, 1, "size") }
            }
        }
    )
}
