package dev.locationgate.client

import java.io.File

/**
 * InstallId.kt and EventQueue.installId (SPEC I1): the installation's id is made once per queue
 * directory, kept across launches, new after a reinstall (the directory gone with the app), and
 * sent in every contextReported.
 */
object InstallIdTests {
    private val RANDOM_UUID = Regex("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")

    private fun idFile(directory: File) = File(directory, InstallIdFile.NAME)
    private fun writingFile(directory: File) = File(directory, InstallIdFile.WRITING_NAME)

    /** What an app does at launch: open the queue, build events with its id, record the context. */
    private fun launch(directory: File): String = EventQueue(directory).use { queue ->
        val events = AndroidEvents("u-1", "d-1", queue.installId, clock = { 1_700_000_000_000L })
        queue.append(events.contextReported(34, 34, "1.0", setOf(AndroidPermission.COARSE, AndroidPermission.FINE)))
        queue.installId
    }

    val cases = listOf(
        TestCase("the first open makes a random UUID and writes it whole before the queue is usable; no temporary file is left") {
            withTemporaryDirectory { directory ->
                EventQueue(directory).use { queue ->
                    expect(RANDOM_UUID.matches(queue.installId)) { "not a random lower-case UUID: ${queue.installId}" }
                    expectEqual(idFile(directory).readText(Charsets.UTF_8), queue.installId, "the file's text")
                    expect(!writingFile(directory).exists()) { "${InstallIdFile.WRITING_NAME} left behind" }
                }
            }
        },
        TestCase("the same installation keeps its id: every later open reads the same one, and the file is not rewritten") {
            withTemporaryDirectory { directory ->
                val id = EventQueue(directory).use { it.installId }
                val written = idFile(directory).lastModified()
                repeat(3) {
                    EventQueue(directory).use { queue -> expectEqual(queue.installId, id, "installId at open ${it + 2}") }
                }
                expectEqual(idFile(directory).readText(Charsets.UTF_8), id, "the file's text")
                expectEqual(idFile(directory).lastModified(), written, "the file's time")
            }
        },
        TestCase("a reinstall gets a new id: the directory wiped (uninstalling deletes it), the next open makes another") {
            withTemporaryDirectory { directory ->
                val storage = File(directory, "locationgate")
                val old = EventQueue(storage).use { it.installId }
                expect(storage.deleteRecursively()) { "could not wipe ${storage.path}" }
                EventQueue(storage).use { queue ->
                    expect(queue.installId != old) { "the id survived the wipe: $old" }
                    expect(RANDOM_UUID.matches(queue.installId)) { "not a random UUID: ${queue.installId}" }
                    expectEqual(idFile(storage).readText(Charsets.UTF_8), queue.installId, "the file's text")
                }
            }
        },
        TestCase("a file holding no valid id (empty, 65 bytes, a control character, not UTF-8) is replaced by a new id") {
            val contents = listOf(
                ByteArray(0),
                "a".repeat(65).toByteArray(),
                "4c1e\n".toByteArray(),
                byteArrayOf(0xC3.toByte(), 0x28)
            )
            for (content in contents) {
                withTemporaryDirectory { directory ->
                    idFile(directory).writeBytes(content)
                    EventQueue(directory).use { queue ->
                        expect(RANDOM_UUID.matches(queue.installId)) { "not a new UUID for ${content.toList()}: ${queue.installId}" }
                        expectEqual(idFile(directory).readText(Charsets.UTF_8), queue.installId, "the file's text")
                    }
                }
            }
        },
        TestCase("a half-written id left by a crash is never used: the open writes a whole new one over it") {
            withTemporaryDirectory { directory ->
                writingFile(directory).writeText("7d3f0c")
                EventQueue(directory).use { queue ->
                    expect(RANDOM_UUID.matches(queue.installId)) { "not a new UUID: ${queue.installId}" }
                    expectEqual(idFile(directory).readText(Charsets.UTF_8), queue.installId, "the file's text")
                    expect(!writingFile(directory).exists()) { "${InstallIdFile.WRITING_NAME} left behind" }
                }
            }
        },
        TestCase("the context's JSON carries the queue's installId, as stored and read back after a relaunch; the next launch sends the same id, another installation another") {
            withTemporaryDirectory { directory ->
                val first = File(directory, "install-a")
                val id = launch(first)
                expectEqual(launch(first), id, "the id at the second launch")
                EventQueue(first).use { queue ->
                    val contexts = queue.peek(10)
                    expectEqual(contexts.size, 2, "contexts queued")
                    for (event in contexts) {
                        expectEqual(event.type, "contextReported", "type")
                        expectEqual(dataOf(event)["installId"], id, "installId in the stored JSON")
                    }
                    val sent = Json.parse(EventSender.body(contexts)) as? Map<*, *> ?: throw TestFailure("the body is not an object")
                    val sentData = (sent["events"] as? List<*>)?.map { ((it as? Map<*, *>)?.get("data") as? Map<*, *>)?.get("installId") }
                    expectEqual(sentData, listOf<Any?>(id, id), "installId in the request body")
                }
                val other = launch(File(directory, "install-b"))
                expect(other != id) { "two installations share the id $id" }
            }
        }
    )
}
