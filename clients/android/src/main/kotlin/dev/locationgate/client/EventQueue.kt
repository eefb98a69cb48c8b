package dev.locationgate.client

import java.io.Closeable
import java.io.File
import java.io.IOException
import java.io.RandomAccessFile
import java.nio.channels.FileLock
import java.nio.channels.OverlappingFileLockException

/** Why the queue did not take or change what it was given. */
open class EventQueueException(message: String, cause: Throwable? = null) : Exception(message, cause)

/**
 * The queue holds `maxEvents` events or `maxBytes` bytes already; nothing was stored.
 *
 * Treat it as "stop recording until the queue drains": a device's state is the fold of its
 * events in order, so the oldest events are the ones the server needs most and the new one is
 * the one to drop. The next `permissionsObserved` puts the device right (D9).
 */
class EventQueueFullException : EventQueueException("the event queue is full")

/** Another `EventQueue`, in this process or another, has the directory open. */
class EventQueueLockedException(path: String) : EventQueueException("another EventQueue has $path open")

/** `close()` was called. */
class EventQueueClosedException : EventQueueException("the event queue is closed")

/** An event with this id is already queued, or was removed since the last compaction: ids are idempotency keys. */
class DuplicateEventIdException(val id: String) : EventQueueException("an event with id $id is already queued or was delivered")

/** The file system failed (a full disk, permissions, an I/O error). */
class EventQueueIoException(message: String, cause: Throwable? = null) : EventQueueException(message, cause)

/**
 * A durable, bounded, on-disk queue of the events an app recorded and the server has not yet
 * acknowledged (SPEC §10, §12), in one directory of the app's own storage: under
 * `context.noBackupFilesDir`, not the cache directory, which the system may empty, and not a
 * directory that Auto Backup saves and restores on reinstall (`filesDir`), which would bring
 * back the install id and events of an earlier installation.
 *
 * The directory also keeps the installation's id (`installId`, SPEC I1) in a file of its own,
 * `install-id`, made at the first open under the directory's lock.
 *
 * An event is on disk, fsynced, before `append` returns, and stays there until `remove` says the
 * server has it: a crash, a kill or a relaunch in between loses nothing, and a removed event never
 * comes back.
 *
 * The directory holds the same files as the Swift client's queue: an append-only journal of
 * events (`events.journal`) and an append-only file of removed ids (`events.acks`), both as
 * length-and-CRC-32 framed records (`QueueRecord`). Opening reads each file up to its first torn
 * or damaged record (a crash mid-write) and cuts it there. When removed records outnumber the
 * pending ones (and exceed `compactionThreshold`), the journal is rewritten with the pending ones
 * alone and renamed over the old one; the acknowledgements are emptied only after that rename is
 * durable, so no crash point loses a pending event or brings back a removed one.
 *
 * Methods are synchronous and thread-safe; each change costs one fsync. Use one queue per
 * directory: a second one on the same directory, in this process or another, is refused with
 * `EventQueueLockedException`.
 */
class EventQueue @JvmOverloads constructor(
    val directory: File,
    val maxEvents: Int = DEFAULT_MAX_EVENTS,
    val maxBytes: Int = DEFAULT_MAX_BYTES,
    val compactionThreshold: Int = DEFAULT_COMPACTION_THRESHOLD
) : Closeable {
    private class Pending(val event: Event, val payload: ByteArray) {
        val recordSize: Int get() = QueueRecord.HEADER_SIZE + payload.size
    }

    private val journalFile = File(directory, JOURNAL_NAME)
    private val acksFile = File(directory, ACKS_NAME)
    private val compactingFile = File(directory, COMPACTING_NAME)
    private val lockFile = File(directory, LOCK_NAME)

    private val lockHandle: RandomAccessFile
    private val lock: FileLock

    /**
     * The app's own id of this installation (SPEC I1): a random UUID made the first time a queue
     * opens `directory`, kept in a file there, the same at every later open. Uninstalling the app
     * deletes the directory, so a reinstall gets a new one. Give it to `AndroidEvents`, which
     * sends it in every `contextReported`: that is how the server tells a reinstall (Android
     * reset the permissions) from a relaunch when `deviceId`, such as ANDROID_ID, stays.
     */
    val installId: String

    private var journal: RandomAccessFile
    private var acks: RandomAccessFile
    private val pending = ArrayList<Pending>()
    private val pendingIds = HashSet<String>()
    private var pendingBytes = 0
    /** The ids in the acknowledgement file. */
    private val acknowledged = HashSet<String>()
    private var journalBytes = 0L
    /** Records in the journal, pending or not: the others are what a compaction drops. */
    private var journalRecords = 0
    private var acksBytes = 0L
    /** Set when a failure left the files in a state this instance can no longer vouch for. */
    private var failure: EventQueueException? = null
    private var closed = false

    init {
        if (!directory.isDirectory && !directory.mkdirs() && !directory.isDirectory) {
            throw EventQueueIoException("cannot create ${directory.path}")
        }
        lockHandle = io("cannot open ${lockFile.path}") { RandomAccessFile(lockFile, "rw") }
        val acquired: FileLock? = try {
            lockHandle.channel.tryLock()
        } catch (error: OverlappingFileLockException) {
            null
        } catch (error: IOException) {
            lockHandle.close()
            throw EventQueueIoException("cannot lock ${lockFile.path}: ${error.message}", error)
        }
        if (acquired == null) {
            lockHandle.close()
            throw EventQueueLockedException(directory.path)
        }
        lock = acquired
        // Under the lock, so that two processes sharing the directory never make two ids.
        installId = try {
            InstallIdFile.readOrCreate(directory) { syncDirectory() }
        } catch (error: Throwable) {
            lockHandle.close()
            throw error
        }
        try {
            // A compaction that crashed before its rename left this; the journal beside it is whole.
            if (compactingFile.exists() && !compactingFile.delete()) throw EventQueueIoException("cannot remove ${compactingFile.path}")
            val created = io("cannot create the queue's files") { journalFile.createNewFile() or acksFile.createNewFile() }
            if (created) syncDirectory()

            // Acknowledgements first: they decide which journal records are still pending.
            val acksData = io("cannot read ${acksFile.path}") { acksFile.readBytes() }
            for (payload in QueueRecord.scan(acksData).payloads) {
                // A whole record of the wrong length was not written by this code: stop there as
                // at any other damage, so that nothing after it is trusted.
                val ids = QueueRecord.ids(payload) ?: break
                acknowledged.addAll(ids)
                acksBytes += QueueRecord.HEADER_SIZE + payload.size
            }

            val journalData = io("cannot read ${journalFile.path}") { journalFile.readBytes() }
            val scan = QueueRecord.scan(journalData)
            for (payload in scan.payloads) {
                // A record whose checksum holds but whose JSON does not read (written by a future
                // version, say) is skipped, not cut: the framing after it is intact.
                val event = eventOf(payload) ?: continue
                if (event.id in acknowledged || event.id in pendingIds) continue
                add(Pending(event, payload))
            }
            journalBytes = scan.validLength.toLong()
            journalRecords = scan.payloads.size

            journal = io("cannot open ${journalFile.path}") { RandomAccessFile(journalFile, "rw") }
            acks = io("cannot open ${acksFile.path}") { RandomAccessFile(acksFile, "rw") }
            // Cut a torn or damaged tail off, so that the next record starts where reading stopped.
            if (journalBytes < journalData.size) cut(journal, journalBytes, journalFile)
            if (acksBytes < acksData.size) cut(acks, acksBytes, acksFile)
        } catch (error: Throwable) {
            lockHandle.close()
            throw error
        }
    }

    /** How many events are pending. */
    val size: Int @Synchronized get() = pending.size

    val isEmpty: Boolean get() = size == 0

    /** The bytes the pending events take in the journal, which `maxBytes` bounds. */
    val byteCount: Int @Synchronized get() = pendingBytes

    /**
     * Stores `event` durably (fsynced before this returns).
     *
     * @throws EventQueueFullException at the bounds (nothing is stored)
     * @throws DuplicateEventIdException when its id is pending or was removed since the last compaction
     * @throws IllegalArgumentException when its id is not a UUID or its JSON is over `MAX_EVENT_BYTES`
     */
    @Synchronized
    fun append(event: Event) {
        checkUsable()
        val id = asciiLowercase(event.id)
        require(AndroidEvents.UUID_TEXT.matches(id)) { "the event's id ${event.id} is not a UUID" }
        val payload = event.json.toByteArray(Charsets.UTF_8)
        require(payload.size <= MAX_EVENT_BYTES) { "the event's JSON is larger than $MAX_EVENT_BYTES bytes" }
        if (id in pendingIds || id in acknowledged) throw DuplicateEventIdException(id)
        val entry = Pending(Event(id, event.type, event.json), payload)
        if (pending.size + 1 > maxEvents || pendingBytes + entry.recordSize > maxBytes) throw EventQueueFullException()
        val record = QueueRecord.frame(payload)
        writeDurably(journal, journalBytes, record, journalFile)
        journalBytes += record.size
        journalRecords += 1
        add(entry)
    }

    /** The oldest pending events, at most `limit`, in the order they were appended: the order the server must apply them in. */
    @Synchronized
    fun peek(limit: Int): List<Event> = pending.take(maxOf(0, limit)).map { it.event }

    /**
     * Records durably that the server has answered for these events: they are never returned
     * again, also after a crash or a reopen. Ids that are not pending are ignored.
     */
    @Synchronized
    fun remove(ids: Collection<String>) {
        checkUsable()
        val fresh = LinkedHashSet<String>()
        for (id in ids) {
            val normal = asciiLowercase(id)
            if (normal in pendingIds) fresh.add(normal)
        }
        if (fresh.isEmpty()) return
        // One record per chunk: a batch's removal is all or nothing, and records stay far below
        // the framing's bound.
        val chunks = fresh.toList().chunked(4096).map { QueueRecord.frame(QueueRecord.idsPayload(it)) }
        var total = 0
        for (chunk in chunks) total += chunk.size
        val records = ByteArray(total)
        var offset = 0
        for (chunk in chunks) {
            System.arraycopy(chunk, 0, records, offset, chunk.size)
            offset += chunk.size
        }
        writeDurably(acks, acksBytes, records, acksFile)
        acksBytes += records.size
        acknowledged.addAll(fresh)
        pending.removeAll { it.event.id in fresh }
        pendingIds.removeAll(fresh)
        pendingBytes = 0
        for (entry in pending) pendingBytes += entry.recordSize
        compactIfNeeded()
    }

    /**
     * Rewrites the journal with the pending events alone. `remove` compacts by itself when it
     * pays; this is for tests and for apps that want the space back at once.
     *
     * The order keeps both promises across a crash at any point: (1) the pending events go to a
     * new file, fsynced (a crash here leaves the old journal and acknowledgements in force; the
     * new file is deleted on open); (2) the new file is renamed over the journal and the directory
     * fsynced (a crash after this leaves the new journal with old acknowledgements that name
     * nothing in it: harmless); (3) only then are the acknowledgements emptied.
     */
    @Synchronized
    fun compact() {
        checkUsable()
        if (compactingFile.exists()) compactingFile.delete()
        val contents = ByteArray(pendingBytes)
        var offset = 0
        for (entry in pending) {
            val record = QueueRecord.frame(entry.payload)
            System.arraycopy(record, 0, contents, offset, record.size)
            offset += record.size
        }
        val next: RandomAccessFile
        try {
            next = RandomAccessFile(compactingFile, "rw")
            try {
                next.setLength(0)
                next.write(contents)
                next.channel.force(true)
                if (!compactingFile.renameTo(journalFile)) throw IOException("cannot rename $COMPACTING_NAME over $JOURNAL_NAME")
            } catch (error: IOException) {
                next.close()
                throw error
            }
        } catch (error: IOException) {
            compactingFile.delete()
            throw EventQueueIoException("compaction failed: ${error.message}", error)
        }
        // The file just written is now the journal.
        try {
            journal.close()
        } catch (ignored: IOException) {
        }
        journal = next
        journalBytes = contents.size.toLong()
        journalRecords = pending.size
        // The rename may not be durable yet: keep the acknowledgements, which still cover the old
        // journal should it come back. They are harmless with the new one.
        if (!syncDirectory()) return
        try {
            acks.setLength(0)
            acks.channel.force(true)
            acksBytes = 0
            acknowledged.clear()
        } catch (error: IOException) {
            val problem = EventQueueIoException("cannot empty ${acksFile.path} after a compaction: ${error.message}", error)
            failure = problem
            throw problem
        }
    }

    /** Closes the files and releases the directory, so that another queue may open it. Later changes throw `EventQueueClosedException`. */
    @Synchronized
    override fun close() {
        if (closed) return
        closed = true
        for (closeable in listOf<Closeable>(journal, acks)) {
            try {
                closeable.close()
            } catch (ignored: IOException) {
            }
        }
        try {
            lock.release()
        } catch (ignored: IOException) {
        }
        try {
            lockHandle.close()
        } catch (ignored: IOException) {
        }
    }

    // Internals.

    private fun add(entry: Pending) {
        pending.add(entry)
        pendingIds.add(entry.event.id)
        pendingBytes += entry.recordSize
    }

    private fun checkUsable() {
        if (closed) throw EventQueueClosedException()
        failure?.let { throw it }
    }

    /** Compacts when more than `compactionThreshold` records are dead and they are most of the journal. */
    private fun compactIfNeeded() {
        val dead = journalRecords - pending.size
        if (dead <= compactionThreshold || dead * 2 <= journalRecords) return
        // A failed compaction leaves the files as they were (or marks the queue failed, which the
        // next call reports); the removal that led here is durable either way.
        try {
            compact()
        } catch (ignored: EventQueueException) {
        }
    }

    /**
     * Writes at the known end of a file and fsyncs. On failure the file is cut back to that end,
     * so that the next record starts at a record boundary (a partial record in the middle would
     * hide every record after it from the next open); when even that fails, the queue refuses
     * further changes until it is opened again.
     */
    private fun writeDurably(file: RandomAccessFile, offset: Long, data: ByteArray, name: File) {
        try {
            file.seek(offset)
            file.write(data)
            file.channel.force(true)
        } catch (error: IOException) {
            try {
                file.setLength(offset)
                file.channel.force(true)
            } catch (second: IOException) {
                failure = EventQueueIoException("cannot cut ${name.path} back after a failed write: ${second.message}", second)
            }
            throw EventQueueIoException("cannot write ${name.path}: ${error.message}", error)
        }
    }

    private fun cut(file: RandomAccessFile, length: Long, name: File) {
        io("cannot truncate ${name.path}") {
            file.setLength(length)
            file.channel.force(true)
        }
    }

    /**
     * fsync of the directory, so that a created or renamed file stays so after a power cut. True
     * when done, or when this platform has no way to do it (java.nio.file before Android 8,
     * which the queue then does without); false when it failed.
     */
    private fun syncDirectory(): Boolean {
        return try {
            java.nio.channels.FileChannel.open(directory.toPath(), java.nio.file.StandardOpenOption.READ).use { it.force(true) }
            true
        } catch (error: IOException) {
            false
        } catch (error: LinkageError) {
            true
        } catch (error: UnsupportedOperationException) {
            true
        }
    }

    private inline fun <T> io(what: String, body: () -> T): T = try {
        body()
    } catch (error: IOException) {
        throw EventQueueIoException("$what: ${error.message}", error)
    }

    companion object {
        /** 10,000 events, as the Swift client. */
        const val DEFAULT_MAX_EVENTS = 10_000
        /** 5 MiB: months of a typical app's permission events. */
        const val DEFAULT_MAX_BYTES = 5 * 1024 * 1024
        /** Compaction waits for this many removed records, so that it stays rare. */
        const val DEFAULT_COMPACTION_THRESHOLD = 1_000
        /** The largest event: one that still fits a 1 MiB request alone (`{"events":[` and `]}` around it). */
        const val MAX_EVENT_BYTES = EventSender.MAX_BODY_BYTES - 13

        const val JOURNAL_NAME = "events.journal"
        const val ACKS_NAME = "events.acks"
        const val COMPACTING_NAME = "events.journal.compacting"
        const val LOCK_NAME = "lock"

        /** The event a journal record holds, or null when it is not one (its id must be a UUID). */
        private fun eventOf(payload: ByteArray): Event? {
            val json = Json.parseOrNull(payload) as? Map<*, *> ?: return null
            val id = (json["id"] as? String)?.let { asciiLowercase(it) } ?: return null
            if (!AndroidEvents.UUID_TEXT.matches(id)) return null
            val type = json["type"] as? String ?: return null
            return Event(id, type, String(payload, Charsets.UTF_8))
        }
    }
}
