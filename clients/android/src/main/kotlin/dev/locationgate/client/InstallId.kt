package dev.locationgate.client

import java.io.File
import java.io.FileOutputStream
import java.io.IOException
import java.nio.ByteBuffer
import java.nio.charset.CharacterCodingException
import java.nio.charset.CodingErrorAction
import java.util.UUID

/**
 * The app's own id of this installation (SPEC I1), kept in a file of the queue's directory
 * (`install-id`, beside the journal; the Swift client keeps it the same way).
 *
 * Deleting an app resets its location permissions, but the `deviceId` an app reports can outlive
 * a reinstall (ANDROID_ID does). The install id does not: it is a random UUID made the first time
 * a queue opens its directory, in the app's own storage, which uninstalling deletes. Every
 * launch of the same installation reads the same id; a reinstall makes a new one, and the server
 * then resets the stream's permission state to a new install's. `AndroidEvents` sends it in
 * every `contextReported`.
 *
 * Keep that directory out of Android's Auto Backup (`context.noBackupFilesDir`): Auto Backup
 * restores an app's files when it is installed again, which would bring the old id back.
 */
internal object InstallIdFile {
    const val NAME = "install-id"
    /** The id while it is written; renamed to `NAME` once on disk. A leftover one is from a crash and is written over. */
    const val WRITING_NAME = "install-id.writing"
    /** SPEC I1: 1 to 64 bytes, bounded as `appVersion`. */
    const val MAX_BYTES = 64

    /**
     * The id kept in `directory`; when there is none, a new one, on disk (the file fsynced, then
     * renamed, then the directory fsynced by `syncDirectory`, which says whether it could) before
     * this returns, so that no event carries an id a crash could take back.
     *
     * The queue calls it with the directory's lock held, so that two processes sharing the
     * directory never make two ids. A file that does not hold an id is replaced, as a first launch
     * would do: this code writes the file whole or not at all, so only something else could have
     * left one.
     */
    fun readOrCreate(directory: File, syncDirectory: () -> Boolean): String {
        val file = File(directory, NAME)
        if (file.isFile) {
            val bytes = try {
                file.readBytes()
            } catch (error: IOException) {
                throw EventQueueIoException("cannot read ${file.path}: ${error.message}", error)
            }
            val stored = utf8OrNull(bytes)
            if (stored != null && isValid(stored)) return stored
        }
        val id = UUID.randomUUID().toString()
        val writing = File(directory, WRITING_NAME)
        try {
            FileOutputStream(writing).use { out ->
                out.write(id.toByteArray(Charsets.UTF_8))
                out.fd.sync()
            }
            if (!writing.renameTo(file)) throw IOException("cannot rename $WRITING_NAME to $NAME")
        } catch (error: IOException) {
            writing.delete()
            throw EventQueueIoException("cannot write ${file.path}: ${error.message}", error)
        }
        if (!syncDirectory()) throw EventQueueIoException("cannot make ${file.path} durable: the directory's fsync failed")
        return id
    }

    /** Whether `text` is an id the server accepts: 1 to 64 bytes of UTF-8 with no control characters (SPEC §1, I1). */
    fun isValid(text: String): Boolean = try {
        AndroidEvents.requireClientText("installId", text, MAX_BYTES)
        true
    } catch (error: IllegalArgumentException) {
        false
    }

    /** `bytes` as text when they are well-formed UTF-8, else null. */
    private fun utf8OrNull(bytes: ByteArray): String? = try {
        Charsets.UTF_8.newDecoder()
            .onMalformedInput(CodingErrorAction.REPORT)
            .onUnmappableCharacter(CodingErrorAction.REPORT)
            .decode(ByteBuffer.wrap(bytes)).toString()
    } catch (error: CharacterCodingException) {
        null
    }
}
