package dev.locationgate.client

import java.io.IOException

/** EventSender.kt and DeliveryOutcome.kt: which answers delete events, which are retried, and how long the sender waits. */
object EventSenderTests {
    private val events = AndroidEvents("u-1", "d-1", TEST_INSTALL_ID, clock = { 1_700_000_000_000L })

    /** Answers from a script (then the server's 200 for whatever is sent), recording each request's ids and bytes. */
    class ScriptedTransport(steps: List<(List<String>) -> HttpAnswer>) : EventTransport {
        private val steps = ArrayList(steps)
        val requests = ArrayList<List<String>>()
        val bodies = ArrayList<ByteArray>()

        override fun send(body: ByteArray): HttpAnswer {
            @Suppress("UNCHECKED_CAST")
            val sent = ((Json.parse(body) as Map<String, Any?>)["events"] as List<Map<String, Any?>>).map { it["id"] as String }
            requests.add(sent)
            bodies.add(body)
            val step = if (steps.isEmpty()) { ids: List<String> -> ok(ids) } else steps.removeAt(0)
            return step(sent)
        }
    }

    fun ok(ids: List<String>, duplicate: Boolean = false): HttpAnswer {
        val results = ids.mapIndexed { position, id ->
            "{\"id\":\"$id\",\"userId\":\"u-1\",\"deviceId\":\"d-1\",\"version\":${position + 1},\"effects\":[],\"status\":\"notDetermined\",\"duplicate\":$duplicate}"
        }
        return HttpAnswer(200, mapOf("content-type" to "application/json"), "{\"results\":[${results.joinToString(",")}]}".toByteArray())
    }

    fun answer(status: Int, body: String, headers: Map<String, String> = emptyMap()): (List<String>) -> HttpAnswer =
        { _ -> HttpAnswer(status, headers, body.toByteArray()) }

    fun error(status: Int, code: String, index: Int?): (List<String>) -> HttpAnswer {
        val indexField = if (index == null) "" else ",\"index\":$index"
        return answer(status, "{\"error\":{\"code\":\"$code\",\"message\":\"refused $code\"$indexField}}", mapOf("content-type" to "application/json"))
    }

    val noAnswer: (List<String>) -> HttpAnswer = { _ -> throw IOException("connection refused") }

    /** A queue of `count` events in a fresh directory, a sender over `transport` whose waits are recorded, with the queue's ids at each wait. */
    class Fixture(directory: java.io.File, count: Int, val transport: EventTransport, random: Double = 1.0, batchSize: Int = 100,
                  retry: RetryPolicy = RetryPolicy(baseMillis = 500, capMillis = 60_000)) {
        val queue = EventQueue(directory)
        val stored = (0 until count).map { events.appStateChanged(AppState.FOREGROUND) }.onEach { queue.append(it) }
        val ids = stored.map { it.id }
        val waits = ArrayList<Long>()
        val pendingAtWaits = ArrayList<List<String>>()
        val reported = ArrayList<DeliveryFailure>()
        val sender = EventSender(queue, transport, batchSize, retry,
            sleep = { waits.add(it); pendingAtWaits.add(queue.peek(Int.MAX_VALUE).map { e -> e.id }) },
            unitRandom = { random },
            onFailure = { reported.add(it) })
    }

    private fun <T> fixture(count: Int, steps: List<(List<String>) -> HttpAnswer>, random: Double = 1.0, batchSize: Int = 100,
                            retry: RetryPolicy = RetryPolicy(), body: (Fixture, ScriptedTransport) -> T): T =
        withTemporaryDirectory { directory ->
            val transport = ScriptedTransport(steps)
            val fixture = Fixture(directory, count, transport, random, batchSize, retry)
            try {
                body(fixture, transport)
            } finally {
                fixture.queue.close()
            }
        }

    /** Answers that are not the server's (as in the Swift client's ServerAnswerTests), each built for the ids sent. */
    private val foreign: List<Pair<String, (List<String>) -> HttpAnswer>> = listOf(
        "a captive portal's 200 page" to answer(200, "<html><body><form>Accept the terms</form></body></html>", mapOf("content-type" to "text/html")),
        "a 204 with no body" to answer(204, ""),
        "{\"results\": []} for 3" to answer(200, "{\"results\": []}"),
        "other ids" to { ids: List<String> -> ok(ids.map { "00000000-0000-4000-8000-000000000001" }) },
        "the right ids reordered" to { ids: List<String> -> ok(ids.reversed()) },
        "results for two of three" to { ids: List<String> -> ok(ids.dropLast(1)) },
        "results without ids" to answer(200, "{\"results\": [{\"ok\": true}, {\"ok\": true}, {\"ok\": true}]}"),
        "duplicate as a string" to { ids: List<String> -> HttpAnswer(200, emptyMap(), String(ok(ids).body).replace("\"duplicate\":false", "\"duplicate\":\"yes\"").toByteArray()) },
        "the server's body with text after it" to { ids: List<String> -> HttpAnswer(200, emptyMap(), (String(ok(ids).body) + " <!-- -->").toByteArray()) },
        "a proxy's 413 page" to answer(413, "<html><body><h1>413 Request Entity Too Large</h1></body></html>"),
        "a WAF's 422 page" to answer(422, "<html><body>Request blocked</body></html>"),
        "an empty 400" to answer(400, ""),
        "a framework's JSON 400" to answer(400, "{\"error\": \"Bad Request\", \"status\": 400}"),
        "a numeric code" to answer(400, "{\"error\": {\"code\": 400, \"message\": \"Bad Request\", \"index\": 0}}"),
        "an unknown code" to answer(400, "{\"error\": {\"code\": \"badRequest\", \"message\": \"Bad Request\", \"index\": 0}}"),
        "the server's shape without a message" to answer(422, "{\"error\": {\"code\": \"validationFailed\", \"index\": 0}}"),
        "an index that is a string" to answer(422, "{\"error\": {\"code\": \"validationFailed\", \"message\": \"m\", \"index\": \"0\"}}"),
        "an HTML 409" to answer(409, "<html><body>Conflict</body></html>"),
        "a 302 to a portal" to answer(302, "", mapOf("location" to "http://portal.example/login")),
        "a 307" to answer(307, ""),
        "an HTML 404" to answer(404, "<html><body>Not Found</body></html>"),
        "a 405 with no body" to answer(405, ""),
        "a 500 page" to answer(500, "<html>oops</html>"),
        "a 502 from a load balancer" to answer(502, "Bad Gateway"),
        "a 408" to answer(408, ""),
        "no answer at all" to noAnswer
    )

    val cases: List<TestCase> = foreign.map { (name, step) ->
        TestCase("not the server's answer ($name): every event stays queued, the same batch is sent again after backoff") {
            fixture(3, listOf(step, step, step)) { f, transport ->
                val summary = f.sender.flush()
                expectEqual(transport.requests, List(4) { f.ids }, "requests")
                expectEqual(f.pendingAtWaits, List(3) { f.ids }, "queue at each wait")
                expectEqual(f.waits, listOf(500L, 1_000L, 2_000L), "waits (jitter at the top of each window)")
                expectEqual(summary, FlushSummary(3, 0, 0, 3, true, emptyList()), "summary")
                expect(f.queue.isEmpty) { "queue not empty" }
                expect(transport.bodies.all { it.contentEquals(transport.bodies[0]) }) { "a retry sent other bytes" }
            }
        }
    } + listOf(
        TestCase("the server's 200 delivers the batch; duplicate:true counts as delivered; ids in either case") {
            fixture(3, listOf({ ids: List<String> ->
                val body = String(ok(ids).body)
                    .replace(ids[1], ids[1].toUpperCaseAscii())
                    .replaceFirst("\"duplicate\":false", "\"duplicate\":true")
                HttpAnswer(200, emptyMap(), body.toByteArray())
            })) { f, transport ->
                val summary = f.sender.flush()
                expectEqual(transport.requests, listOf(f.ids), "requests")
                expectEqual(summary, FlushSummary(3, 1, 0, 0, true, emptyList()), "summary")
                expect(f.waits.isEmpty()) { "waited: ${f.waits}" }
                expect(f.queue.isEmpty) { "queue not empty" }
            }
        },
        TestCase("the request body is {\"events\":[...]} of the stored JSON, byte for byte") {
            fixture(2, emptyList()) { f, transport ->
                f.sender.flush()
                expectEqual(String(transport.bodies[0]), "{\"events\":[${f.stored[0].json},${f.stored[1].json}]}", "body")
            }
        },
        TestCase("a refusal (422 validationFailed/ruleViolation, 409 versionConflict/idConflict, 400 invalidRequest) naming an event drops it alone, reports it, sends the rest") {
            for ((status, code) in listOf(422 to "validationFailed", 422 to "ruleViolation", 409 to "versionConflict", 409 to "idConflict", 400 to "invalidRequest", 413 to "tooLarge")) {
                fixture(3, listOf(error(status, code, 1))) { f, transport ->
                    val summary = f.sender.flush()
                    expectEqual(transport.requests, listOf(f.ids, listOf(f.ids[0], f.ids[2])), "$code: requests")
                    expectEqual(summary.delivered to summary.rejected, 2 to 1, "$code: delivered, rejected")
                    expectEqual(summary.failures, listOf(DeliveryFailure(f.stored[1], status, code, "refused $code")), "$code: failures")
                    expectEqual(f.reported, summary.failures, "$code: onFailure")
                    expect(f.waits.isEmpty()) { "$code: waited ${f.waits}" }
                    expect(f.queue.isEmpty) { "$code: queue not empty" }
                }
            }
        },
        TestCase("a refusal naming no event halves the batch until the culprit is alone, then drops it") {
            fixture(4, listOf(error(422, "validationFailed", null), error(422, "validationFailed", null), error(422, "validationFailed", null))) { f, transport ->
                val summary = f.sender.flush()
                expectEqual(transport.requests, listOf(f.ids, f.ids.take(2), f.ids.take(1), f.ids.drop(1)), "requests")
                expectEqual(summary.rejected to summary.delivered, 1 to 3, "rejected, delivered")
                expectEqual(summary.failures.map { it.event.id }, listOf(f.ids[0]), "dropped")
            }
        },
        TestCase("an index outside the batch is a refusal naming no event") {
            fixture(2, listOf(error(422, "validationFailed", 7), error(422, "validationFailed", 7))) { f, transport ->
                f.sender.flush()
                expectEqual(transport.requests, listOf(f.ids, f.ids.take(1), f.ids.drop(1)), "requests")
            }
        },
        TestCase("429 and 503 with Retry-After wait exactly that long (capped at an hour), then send the same batch") {
            for (status in listOf(429, 503)) {
                val steps = listOf(answer(status, "", mapOf("Retry-After" to "7")), answer(status, "", mapOf("retry-after" to " 2.5 ")),
                    answer(status, "{\"error\":{\"code\":\"overloaded\",\"message\":\"m\"}}", mapOf("retry-after" to "99999")),
                    answer(status, "", mapOf("retry-after" to "Wed, 21 Oct 2015 07:28:00 GMT")))
                fixture(2, steps) { f, transport ->
                    f.sender.flush()
                    expectEqual(f.waits, listOf(7_000L, 2_500L, 3_600_000L, 4_000L), "$status: waits (the date form backs off, 4th window)")
                    expectEqual(transport.requests, List(5) { f.ids }, "$status: requests")
                }
            }
        },
        TestCase("without an answer the windows double from the base up to the cap; full jitter scales them") {
            fixture(1, List(6) { noAnswer }, retry = RetryPolicy(baseMillis = 500, capMillis = 4_000)) { f, _ ->
                f.sender.flush()
                expectEqual(f.waits, listOf(500L, 1_000L, 2_000L, 4_000L, 4_000L, 4_000L), "waits")
            }
            fixture(1, List(3) { noAnswer }, random = 0.25) { f, _ ->
                f.sender.flush()
                expectEqual(f.waits, listOf(125L, 250L, 500L), "waits at a quarter of each window")
            }
            val policy = RetryPolicy()
            expectEqual(policy.windowMillis(100), 60_000L, "cap")
            expectEqual(policy.delayMillis(0, 2.0), 500L, "unitRandom clamped")
            expectEqual(policy.delayMillis(0, Double.NaN), 0L, "NaN")
        },
        TestCase("a delivered batch resets the backoff") {
            fixture(3, listOf(noAnswer, noAnswer, { ids: List<String> -> ok(ids) }, noAnswer), batchSize = 2) { f, _ ->
                f.sender.flush()
                expectEqual(f.waits, listOf(500L, 1_000L, 500L), "waits")
            }
        },
        TestCase("401 and 403 stop the sender: nothing dropped, nothing retried") {
            for ((status, body) in listOf(401 to "<html>login</html>", 403 to "{\"error\":{\"code\":\"forbidden\",\"message\":\"scope\"}}")) {
                fixture(2, listOf(answer(status, body))) { f, transport ->
                    val error = expectThrows<DeliveryException.Unauthorized>("$status") { f.sender.flush() }
                    expectEqual(error.status, status, "status")
                    expectEqual(error.serverMessage, if (status == 401) "status 401" else "scope", "message")
                    expectEqual(transport.requests.size, 1, "$status: requests")
                    expectEqual(f.queue.peek(10), f.stored, "$status: queue")
                }
            }
        },
        TestCase("403 forbidden naming an event (a device-bound token that does not cover it) drops that event alone") {
            fixture(2, listOf(error(403, "forbidden", 0))) { f, transport ->
                val summary = f.sender.flush()
                expectEqual(transport.requests, listOf(f.ids, f.ids.drop(1)), "requests")
                expectEqual(summary.failures.map { it.code }, listOf<String?>("forbidden"), "failures")
            }
        },
        TestCase("the server's own 404 stops the sender (the base URL misses the API); nothing dropped") {
            fixture(2, listOf(answer(404, "{\"error\": {\"code\": \"notFound\", \"message\": \"no route /api/v1/events\"}}"))) { f, _ ->
                val error = expectThrows<DeliveryException.UnexpectedStatus>("404") { f.sender.flush() }
                expectEqual(error.serverMessage, "no route /api/v1/events", "message")
                expectEqual(f.queue.size, 2, "queue")
            }
        },
        TestCase("maxRetries: a flush gives up with complete=false, nothing lost") {
            fixture(2, List(10) { answer(503, "") }) { f, _ ->
                val summary = f.sender.flush(maxRetries = 2)
                expectEqual(summary, FlushSummary(0, 0, 0, 2, false, emptyList()), "summary")
                expectEqual(f.queue.size, 2, "queue")
            }
        },
        TestCase("an interrupted wait stops the flush with InterruptedException, nothing lost") {
            withTemporaryDirectory { directory ->
                EventQueue(directory).use { queue ->
                    queue.append(events.permissionsReset())
                    val sender = EventSender(queue, ScriptedTransport(listOf(noAnswer)), sleep = { throw InterruptedException() })
                    expectThrows<InterruptedException>("flush") { sender.flush() }
                    expectEqual(queue.size, 1, "queue")
                }
            }
        },
        TestCase("batches hold at most batchSize events (1..1000) and 1 MiB, oldest first") {
            fixture(5, emptyList(), batchSize = 2) { f, transport ->
                f.sender.flush()
                expectEqual(transport.requests, listOf(f.ids.take(2), f.ids.subList(2, 4), f.ids.drop(4)), "requests")
            }
            withTemporaryDirectory { directory ->
                EventQueue(directory, maxBytes = 10 shl 20).use { queue ->
                    val big = (0 until 4).map { events.custom("appStateChanged", "{\"pad\":\"" + "x".repeat(300_000) + "\"}") }
                    big.forEach { queue.append(it) }
                    val transport = ScriptedTransport(emptyList())
                    EventSender(queue, transport, batchSize = 1000).flush()
                    expectEqual(transport.requests.map { it.size }, listOf(3, 1), "batch sizes by bytes")
                    expect(transport.bodies.all { it.size <= EventSender.MAX_BODY_BYTES }) { "a body over 1 MiB" }
                }
            }
            expectEqual(EventSender(EventQueueTestsSupport.nullQueue(), ScriptedTransport(emptyList()), batchSize = 5000).batchSize, 1000, "clamped")
        },
        TestCase("classification, as the Swift client's") {
            val ids = listOf("11111111-1111-4111-8111-111111111111", "22222222-2222-4222-8222-222222222222")
            fun classify(status: Int, body: String, headers: Map<String, String> = emptyMap()) =
                DeliveryOutcome.classify(status, headers, body.toByteArray(), ids)
            val results = "{\"results\": [{\"id\": \"${ids[0]}\", \"duplicate\": true}, {\"id\": \"${ids[1]}\"}]}"
            expectEqual(classify(200, results), DeliveryOutcome.Accepted(1), "200")
            expectEqual(classify(201, results), DeliveryOutcome.Accepted(1), "201")
            expectEqual(classify(200, "{\"results\": [{\"id\": \"${ids[0]}\"}]}"), DeliveryOutcome.Retry(null), "one result for two")
            expectEqual(classify(301, "", mapOf("Retry-After" to "5")), DeliveryOutcome.Retry(null), "3xx ignores Retry-After")
            for ((status, code) in listOf(400 to "malformedJSON", 400 to "invalidRequest", 409 to "versionConflict", 409 to "idConflict", 413 to "tooLarge", 422 to "validationFailed", 422 to "ruleViolation")) {
                expectEqual(classify(status, "{\"error\": {\"code\": \"$code\", \"message\": \"m\", \"index\": 1}}"), DeliveryOutcome.RefuseEvent(1, status, code, "m"), "$code with index")
                expectEqual(classify(status, "{\"error\": {\"code\": \"$code\", \"message\": \"m\"}}"), DeliveryOutcome.RefuseBatch(status, code, "m"), "$code without index")
                expectEqual(classify(status, "{\"error\": {\"code\": \"$code\", \"message\": \"m\", \"index\": null}}"), DeliveryOutcome.RefuseBatch(status, code, "m"), "$code index null")
                expectEqual(classify(status, "<html>$code</html>"), DeliveryOutcome.Retry(null), "$code as HTML")
            }
            expectEqual(classify(422, "{\"error\": {\"code\": \"unauthorized\", \"message\": \"m\", \"index\": 0}}"), DeliveryOutcome.Retry(null), "422 with another code")
            expectEqual(classify(503, "<html>busy</html>", mapOf("Retry-After" to "3")), DeliveryOutcome.Retry(3_000L), "503")
            expectEqual(classify(429, "", mapOf("retry-after" to "7")), DeliveryOutcome.Retry(7_000L), "429")
            expectEqual(classify(429, "", mapOf("retry-after" to "-1")), DeliveryOutcome.Retry(null), "negative Retry-After")
            expectEqual(classify(503, "", mapOf("retry-after" to "0x10")), DeliveryOutcome.Retry(null), "hex Retry-After")
            val stop401 = classify(401, "<html>login</html>") as DeliveryOutcome.Stop
            expect(stop401.error is DeliveryException.Unauthorized && stop401.error.status == 401) { "401: $stop401" }
            expectEqual(classify(403, "{\"error\": {\"code\": \"forbidden\", \"message\": \"m\", \"index\": 1}}"), DeliveryOutcome.RefuseEvent(1, 403, "forbidden", "m"), "403 naming an event")
            expect((classify(403, "{\"error\": {\"code\": \"forbidden\", \"message\": \"m\", \"index\": 5}}") as DeliveryOutcome.Stop).error is DeliveryException.Unauthorized) { "403 index outside" }
            expectEqual(classify(405, ""), DeliveryOutcome.Retry(null), "405 not the server's")
            expect((classify(405, "{\"error\": {\"code\": \"methodNotAllowed\", \"message\": \"m\"}}") as DeliveryOutcome.Stop).error is DeliveryException.UnexpectedStatus) { "405 the server's" }
            expect((classify(600, "") as DeliveryOutcome.Stop).error is DeliveryException.UnexpectedStatus) { "600" }
        }
    )

    private fun String.toUpperCaseAscii() = map { if (it in 'a'..'z') it - ('a' - 'A') else it }.joinToString("")
}

/** A closed queue in a throwaway directory, for checks that need a queue and never touch it. */
object EventQueueTestsSupport {
    fun nullQueue(): EventQueue {
        val directory = java.nio.file.Files.createTempDirectory("locgate-android-null-").toFile()
        val queue = EventQueue(directory)
        queue.close()
        directory.deleteRecursively()
        return queue
    }
}
