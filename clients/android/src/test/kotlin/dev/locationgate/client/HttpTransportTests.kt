package dev.locationgate.client

import com.sun.net.httpserver.HttpExchange
import com.sun.net.httpserver.HttpServer
import java.io.IOException
import java.net.InetSocketAddress
import java.net.ServerSocket

/** EventTransport.kt against a local HTTP server (the JDK's own): what goes on the wire, what comes back. */
object HttpTransportTests {
    class Request(val method: String, val path: String, val headers: Map<String, String>, val body: ByteArray)

    /** A local server answering each request with the next of `answers` (status, headers, body). */
    class LocalServer(private val answers: MutableList<Triple<Int, Map<String, String>, String>>) : java.io.Closeable {
        val requests = ArrayList<Request>()
        private val server: HttpServer = HttpServer.create(InetSocketAddress("127.0.0.1", 0), 0)

        init {
            server.createContext("/") { exchange -> handle(exchange) }
            server.start()
        }

        val baseUrl: String get() = "http://127.0.0.1:${server.address.port}"

        @Synchronized
        private fun handle(exchange: HttpExchange) {
            val body = exchange.requestBody.readBytes()
            val headers = exchange.requestHeaders.entries.associate { asciiLowercase(it.key) to it.value.first() }
            requests.add(Request(exchange.requestMethod, exchange.requestURI.path, headers, body))
            val (status, answerHeaders, text) = if (answers.isEmpty()) Triple(500, emptyMap<String, String>(), "no more answers") else answers.removeAt(0)
            for ((name, value) in answerHeaders) exchange.responseHeaders.add(name, value)
            val bytes = text.toByteArray()
            exchange.sendResponseHeaders(status, if (bytes.isEmpty()) -1 else bytes.size.toLong())
            if (bytes.isNotEmpty()) exchange.responseBody.use { it.write(bytes) }
            exchange.close()
        }

        override fun close() = server.stop(0)
    }

    val cases = listOf(
        TestCase("POST {base}/v1/events with the bearer key and JSON, the body as given; the answer read back") {
            LocalServer(mutableListOf(Triple(200, mapOf("Content-Type" to "application/json", "X-Thing" to "1"), "{\"results\":[]}"))).use { server ->
                val transport = HttpEventTransport(server.baseUrl + "/gate/", "lg_ingest_key", deviceToken = { "token-1" })
                val answer = transport.send("{\"events\":[]}".toByteArray())
                expectEqual(answer.status, 200, "status")
                expectEqual(String(answer.body), "{\"results\":[]}", "body")
                expectEqual(answer.headers["x-thing"], "1", "headers by lower-case name")
                val request = server.requests.single()
                expectEqual(request.method, "POST", "method")
                expectEqual(request.path, "/gate/v1/events", "path")
                expectEqual(request.headers["authorization"], "Bearer lg_ingest_key", "authorization")
                expectEqual(request.headers["content-type"], "application/json", "content type")
                expectEqual(request.headers["x-device-token"], "token-1", "device token")
                expectEqual(String(request.body), "{\"events\":[]}", "request body")
            }
        },
        TestCase("an error's body is read (422, 503 with Retry-After); a redirect is returned, not followed") {
            LocalServer(mutableListOf(
                Triple(422, mapOf("Content-Type" to "application/json"), "{\"error\":{\"code\":\"validationFailed\",\"message\":\"type\",\"index\":0}}"),
                Triple(503, mapOf("Retry-After" to "2"), "{\"error\":{\"code\":\"overloaded\",\"message\":\"busy\"}}"),
                Triple(302, mapOf("Location" to "/portal"), "")
            )).use { server ->
                val transport = HttpEventTransport(server.baseUrl, "k")
                val refused = transport.send(ByteArray(0))
                expectEqual(refused.status, 422, "422 status")
                expectEqual(DeliveryOutcome.serverError(refused.body)?.index, 0, "422 body read")
                val busy = transport.send(ByteArray(0))
                expectEqual(DeliveryOutcome.classify(busy.status, busy.headers, busy.body, listOf("x")), DeliveryOutcome.Retry(2_000L), "503")
                val redirect = transport.send(ByteArray(0))
                expectEqual(redirect.status, 302, "302 returned")
                expectEqual(server.requests.map { it.path }, listOf("/v1/events", "/v1/events", "/v1/events"), "the portal was never asked")
            }
        },
        TestCase("no server listening is an IOException, which the sender retries") {
            val port = ServerSocket(0).use { it.localPort }
            expectThrows<IOException>("connection refused") { HttpEventTransport("http://127.0.0.1:$port", "k", connectTimeoutMillis = 2_000).send(ByteArray(0)) }
            expectThrows<IllegalArgumentException>("ftp") { HttpEventTransport("ftp://example.com", "k") }
        },
        TestCase("sender over HTTP: a 503, a captive portal, then the server's 200; delivered once, queue empty") {
            withTemporaryDirectory { directory ->
                EventQueue(directory).use { queue ->
                    val events = AndroidEvents("u-1", "d-1", TEST_INSTALL_ID)
                    val stored = listOf(events.permissionsRequested(setOf(AndroidPermission.COARSE)), events.permissionsResultFrom(emptyMap()) { false }!!)
                    stored.forEach { queue.append(it) }
                    val results = stored.joinToString(",") { "{\"id\":\"${it.id}\",\"duplicate\":false}" }
                    LocalServer(mutableListOf(
                        Triple(503, mapOf("Retry-After" to "0"), ""),
                        Triple(200, mapOf("Content-Type" to "text/html"), "<html>Wi-Fi login</html>"),
                        Triple(200, mapOf("Content-Type" to "application/json"), "{\"results\":[$results]}")
                    )).use { server ->
                        val waits = ArrayList<Long>()
                        val sender = EventSender(queue, HttpEventTransport(server.baseUrl, "k"), sleep = { waits.add(it) }, unitRandom = { 0.0 })
                        val summary = sender.flush()
                        expectEqual(summary, FlushSummary(2, 0, 0, 2, true, emptyList()), "summary")
                        expectEqual(waits, listOf(0L, 0L), "waits")
                        expectEqual(server.requests.map { String(it.body) }.distinct(), listOf(String(EventSender.body(stored))), "the same bytes every time")
                        expect(queue.isEmpty) { "queue not empty" }
                    }
                }
            }
        }
    )
}
