package dev.locationgate.client

import java.io.ByteArrayOutputStream
import java.io.IOException
import java.io.InputStream
import java.net.HttpURLConnection
import java.net.URL

/** One HTTP answer: the status, the headers (names in lower case) and the body. */
class HttpAnswer(val status: Int, val headers: Map<String, String>, val body: ByteArray)

/**
 * Delivers one request body to `POST /v1/events` and returns the raw answer. The sender decides
 * everything (what to retry, what to delete); a transport only moves bytes, which keeps the rules
 * testable with a scripted transport and lets an app bring its own HTTP stack (OkHttp, say).
 */
interface EventTransport {
    /**
     * Sends `body` (`{"events": [...]}`, JSON). Throws `IOException` for a failure with no HTTP
     * answer (no connection, a timeout), which the sender retries.
     */
    @Throws(IOException::class)
    fun send(body: ByteArray): HttpAnswer
}

/**
 * `EventTransport` over `java.net.HttpURLConnection`: `POST {baseUrl}/v1/events` with
 * `Authorization: Bearer KEY`. Give it an `ingest` key (SPEC §5): what a device may hold, which
 * appends events and reads nothing. Use https in production: the key travels in every request.
 *
 * Redirects are not followed: a captive portal redirects to its login page, whose 200 is not the
 * server's answer, and a redirect would carry the key elsewhere. The 3xx is returned as it is,
 * and the sender retries later.
 *
 * @param deviceToken for a device-bound ingest key: the current token from the app's backend,
 *   asked for before every request and sent as `X-Device-Token` (null sends none)
 */
class HttpEventTransport @JvmOverloads constructor(
    baseUrl: String,
    private val ingestKey: String,
    private val connectTimeoutMillis: Int = 15_000,
    private val readTimeoutMillis: Int = 30_000,
    private val deviceToken: (() -> String?)? = null
) : EventTransport {
    /** `{baseUrl}/v1/events`. */
    val endpoint: URL = URL(baseUrl.trimEnd('/') + "/v1/events")

    init {
        require(endpoint.protocol == "https" || endpoint.protocol == "http") { "the base URL must be http or https" }
    }

    override fun send(body: ByteArray): HttpAnswer {
        val connection = endpoint.openConnection() as HttpURLConnection
        try {
            connection.requestMethod = "POST"
            connection.instanceFollowRedirects = false
            connection.useCaches = false
            connection.doOutput = true
            connection.connectTimeout = connectTimeoutMillis
            connection.readTimeout = readTimeoutMillis
            connection.setRequestProperty("Authorization", "Bearer $ingestKey")
            connection.setRequestProperty("Content-Type", "application/json")
            connection.setRequestProperty("Accept", "application/json")
            deviceToken?.invoke()?.let { connection.setRequestProperty("X-Device-Token", it) }
            connection.setFixedLengthStreamingMode(body.size)
            connection.outputStream.use { it.write(body) }
            val status = connection.responseCode
            if (status < 0) throw IOException("the answer is not HTTP")
            val headers = HashMap<String, String>()
            for ((name, values) in connection.headerFields) {
                if (name != null && values != null && values.isNotEmpty()) headers[asciiLowercase(name)] = values[0]
            }
            val stream: InputStream? = if (status >= 400) {
                connection.errorStream
            } else {
                try {
                    connection.inputStream
                } catch (error: IOException) {
                    connection.errorStream
                }
            }
            val answer = stream?.use { readBounded(it) } ?: ByteArray(0)
            return HttpAnswer(status, headers, answer)
        } catch (error: IOException) {
            connection.disconnect()
            throw error
        }
    }

    companion object {
        /** The most of an answer read: the server's answer to 1,000 events is far below; a larger one is not its answer. */
        const val MAX_ANSWER_BYTES = 16 shl 20

        private fun readBounded(stream: InputStream): ByteArray {
            val out = ByteArrayOutputStream()
            val buffer = ByteArray(16 * 1024)
            while (true) {
                val count = stream.read(buffer)
                if (count < 0) return out.toByteArray()
                if (out.size() + count > MAX_ANSWER_BYTES) throw IOException("the answer is larger than $MAX_ANSWER_BYTES bytes")
                out.write(buffer, 0, count)
            }
        }
    }
}
