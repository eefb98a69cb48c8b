package dev.locationgate.client

import java.io.IOException
import java.net.HttpURLConnection
import java.net.URL
import java.util.UUID

/**
 * Against a real `locgate serve` (LOCGATE_URL, and LOCGATE_ADMIN_KEY: an app's admin key): an
 * Android device's context, a request and its result delivered through the library, the same
 * batch again (all duplicates), an event the server refuses dropped alone, and the device's state.
 */
class ServerTests(private val baseUrl: String, private val adminKey: String) {
    private val userId = "android-it-" + UUID.randomUUID().toString().substring(0, 8)
    private val deviceId = "pixel-" + UUID.randomUUID().toString().substring(0, 8)
    private val events = AndroidEvents(userId, deviceId, UUID.randomUUID().toString())
    private var ingestKey = ""
    private var recorded: List<Event> = emptyList()
    private val directories = ArrayList<java.io.File>()

    /** A transport that also keeps each answer's status and body. */
    private class RecordingTransport(private val inner: EventTransport) : EventTransport {
        val answers = ArrayList<HttpAnswer>()
        override fun send(body: ByteArray): HttpAnswer = inner.send(body).also { answers.add(it) }
    }

    private fun newQueue(): EventQueue {
        val directory = java.nio.file.Files.createTempDirectory("locgate-android-it-").toFile()
        directories.add(directory)
        return EventQueue(directory)
    }

    private fun sender(queue: EventQueue, transport: EventTransport) =
        EventSender(queue, transport, retry = RetryPolicy(baseMillis = 200, capMillis = 2_000))

    fun cases(): List<TestCase> = listOf(
        TestCase("POST /v1/keys {\"scope\": \"ingest\"} with the admin key gives an ingest key") {
            val (status, body) = call("POST", "/v1/keys", adminKey, "{\"scope\":\"ingest\"}")
            expectEqual(status, 201, "status of POST /v1/keys: $body")
            val json = Json.parse(body) as Map<*, *>
            expectEqual(json["scope"], "ingest", "scope")
            ingestKey = json["key"] as? String ?: throw TestFailure("no key in $body")
        },
        TestCase("an Android device's context (API 34, targetSdk 34), permissionsRequested [coarse, fine] and the result {FINE: true, COARSE: true} are delivered") {
            recorded = listOf(
                events.contextReported(34, 34, "1.0.0", setOf(AndroidPermission.COARSE, AndroidPermission.FINE, AndroidPermission.BACKGROUND, AndroidPermission.FOREGROUND_SERVICE_LOCATION), osVersion = "14"),
                events.permissionsRequested(setOf(AndroidPermission.COARSE, AndroidPermission.FINE)),
                events.permissionsResultFrom(mapOf("android.permission.ACCESS_FINE_LOCATION" to true, "android.permission.ACCESS_COARSE_LOCATION" to true)) { false }!!
            )
            newQueue().use { queue ->
                recorded.forEach { queue.append(it) }
                val transport = RecordingTransport(HttpEventTransport(baseUrl, ingestKey))
                val summary = sender(queue, transport).flush(maxRetries = 5)
                expectEqual(summary, FlushSummary(3, 0, 0, 0, true, emptyList()), "summary (answers: ${transport.answers.map { "${it.status} ${String(it.body).take(300)}" }})")
                expect(queue.isEmpty) { "queue not empty" }
                val results = (Json.parse(transport.answers.last().body) as Map<*, *>)["results"] as List<*>
                expectEqual(results.map { (it as Map<*, *>)["version"] }, listOf<Any?>(1L, 2L, 3L), "versions")
            }
        },
        TestCase("the same batch sent again (same ids) is answered duplicate:true and counts as delivered") {
            newQueue().use { queue ->
                recorded.forEach { queue.append(it) }
                val transport = RecordingTransport(HttpEventTransport(baseUrl, ingestKey))
                val summary = sender(queue, transport).flush(maxRetries = 5)
                expectEqual(summary, FlushSummary(3, 3, 0, 0, true, emptyList()), "summary")
                expect(queue.isEmpty) { "queue not empty" }
            }
        },
        TestCase("an Apple event (authorizationRequested) on this Android device is refused with a 422 naming it, dropped alone; the rest delivered") {
            newQueue().use { queue ->
                val invalid = events.custom("authorizationRequested", "{\"request\":\"whenInUse\"}")
                listOf(recorded[0], invalid, recorded[2]).forEach { queue.append(it) }
                val transport = RecordingTransport(HttpEventTransport(baseUrl, ingestKey))
                val summary = sender(queue, transport).flush(maxRetries = 5)
                expectEqual(transport.answers.map { it.status }, listOf(422, 200), "statuses (bodies: ${transport.answers.map { String(it.body).take(300) }})")
                val refusal = DeliveryOutcome.serverError(transport.answers[0].body) ?: throw TestFailure("the 422 is not the server's error body")
                expectEqual(refusal.index, 1, "the 422's index")
                expectEqual(summary.failures.map { it.event.id }, listOf(invalid.id), "dropped")
                expect(summary.failures[0].code == "validationFailed" || summary.failures[0].code == "ruleViolation") { "code ${summary.failures[0].code}" }
                expectEqual(summary.delivered to summary.duplicates, 2 to 2, "delivered, duplicates")
                expect(queue.isEmpty) { "queue not empty" }
            }
        },
        TestCase("GET /v1/users/{u}/devices/{d}/state: version 3, foreground precise, status authorizedWhenInUse") {
            val (status, body) = call("GET", "/v1/users/$userId/devices/$deviceId/state", adminKey, null)
            expectEqual(status, 200, "status of GET state: $body")
            val json = Json.parse(body) as Map<*, *>
            expectEqual(json["version"], 3L, "version")
            val state = json["state"] as? Map<*, *> ?: throw TestFailure("no state in $body")
            expectEqual(state["foreground"], "precise", "state.foreground")
            expectEqual(state["status"], "authorizedWhenInUse", "state.status")
            expectEqual(state["background"], false, "state.background")
            val (historyStatus, history) = call("GET", "/v1/users/$userId/devices/$deviceId/history", adminKey, null)
            expectEqual(historyStatus, 200, "status of GET history")
            val entries = (Json.parse(history) as Map<*, *>)["entries"] as List<*>
            expectEqual(entries.map { (it as Map<*, *>)["id"] }, recorded.map { it.id }, "history ids")
            directories.forEach { it.deleteRecursively() }
        }
    )

    /** One request with a bearer key; the status and the body as text. */
    private fun call(method: String, path: String, key: String, body: String?): Pair<Int, String> {
        val connection = URL(baseUrl.trimEnd('/') + path).openConnection() as HttpURLConnection
        connection.requestMethod = method
        connection.connectTimeout = 10_000
        connection.readTimeout = 30_000
        connection.setRequestProperty("Authorization", "Bearer $key")
        if (body != null) {
            connection.doOutput = true
            connection.setRequestProperty("Content-Type", "application/json")
            connection.outputStream.use { it.write(body.toByteArray()) }
        }
        val status = connection.responseCode
        val stream = if (status >= 400) connection.errorStream else try {
            connection.inputStream
        } catch (error: IOException) {
            connection.errorStream
        }
        return status to (stream?.use { String(it.readBytes(), Charsets.UTF_8) } ?: "")
    }

    companion object {
        fun fromEnvironment(): ServerTests? {
            val url = System.getenv("LOCGATE_URL")?.takeIf { it.isNotBlank() } ?: return null
            val key = System.getenv("LOCGATE_ADMIN_KEY")?.takeIf { it.isNotBlank() } ?: return null
            return ServerTests(url, key)
        }
    }
}
