package dev.locationgate.client

import java.io.ByteArrayOutputStream
import java.io.IOException
import kotlin.random.Random

/**
 * An event the server refused for good (422 `validationFailed` or `ruleViolation`, 409
 * `versionConflict`...), now dropped from the queue: keeping it would block every event behind
 * it. With events built by `AndroidEvents` this means the server's rules and the device disagree,
 * which is worth logging.
 */
data class DeliveryFailure(val event: Event, val status: Int, val code: String?, val message: String)

/** What one `flush()` did. */
data class FlushSummary(
    /** Events the server acknowledged, duplicates included. */
    val delivered: Int,
    /** Of those, the ones it already had: a retry whose first answer was lost. */
    val duplicates: Int,
    /** Events refused for good and dropped, each in `failures`. */
    val rejected: Int,
    /** Waits before a retry: no answer, 429, 503, a server fault, an answer that was not the server's. */
    val retries: Int,
    /** False when the flush gave up after `maxRetries` retries with events still queued. */
    val complete: Boolean,
    val failures: List<DeliveryFailure>
)

/**
 * Delivers the queue's events to `POST {baseUrl}/v1/events`, oldest first, in batches (at most
 * `batchSize` events, at most 1,000, and 1 MiB), exactly once, with the Swift client's rules.
 *
 * Exactly once is the product of three things: the queue keeps an event until the server's answer
 * for it has been recorded on disk; a batch with no answer is sent again with the same ids and
 * the same bytes; and the server answers an id it already stored with `duplicate: true`, which
 * counts as delivered (SPEC §1).
 *
 * Only the server's own answers delete events (`DeliveryOutcome`):
 * - a 2xx `{"results": [...]}` with the ids sent, in order: the batch is delivered;
 * - 408, 429, 5xx, a 3xx, a 2xx or 4xx whose body is not the server's JSON, or no answer at all:
 *   the same batch again after Retry-After (seconds, up to an hour) or after exponential backoff
 *   with full jitter (`RetryPolicy`);
 * - 400, 409, 413, 422 with the server's error and a code that says the batch is wrong
 *   (`validationFailed`, `ruleViolation`, `versionConflict`, `idConflict`, `malformedJSON`, `invalidRequest`,
 *   `tooLarge`): with `error.index` that event is dropped and reported, and the rest sent again;
 *   without one the batch is halved until the culprit is named or alone;
 * - a 403 `forbidden` naming an event (a device-bound key's token does not cover it): dropped
 *   and reported the same way;
 * - 401, 403 otherwise: `DeliveryException.Unauthorized`, nothing dropped;
 * - the server's own error with another 4xx (404, 405): `DeliveryException.UnexpectedStatus`.
 *
 * One batch is in flight at a time (`flush` is synchronized), which keeps each device's events in
 * order. `flush` blocks: call it from a background thread, such as a WorkManager `Worker`.
 *
 * @param sleep waits before a retry, in milliseconds; tests record instead
 * @param unitRandom the jitter, a number in 0..1; tests fix it
 * @param onFailure told of each event refused for good, as it is dropped
 */
class EventSender @JvmOverloads constructor(
    val queue: EventQueue,
    private val transport: EventTransport,
    batchSize: Int = DEFAULT_BATCH_SIZE,
    val retry: RetryPolicy = RetryPolicy(),
    private val sleep: (Long) -> Unit = { Thread.sleep(it) },
    private val unitRandom: () -> Double = { Random.nextDouble() },
    private val onFailure: (DeliveryFailure) -> Unit = {}
) {
    /** Sends with `HttpEventTransport` to `{baseUrl}/v1/events`, authenticated with an `ingest` key. */
    constructor(queue: EventQueue, baseUrl: String, ingestKey: String) : this(queue, HttpEventTransport(baseUrl, ingestKey))

    /** Events per request, 1 to 1,000 (SPEC §5's limit); smaller batches answer sooner. */
    val batchSize: Int = batchSize.coerceIn(1, MAX_BATCH_EVENTS)

    /**
     * Sends until the queue is empty, retrying what can be retried, at most `maxRetries` times in
     * all (then it returns with `complete` false; nothing is lost). Interrupting the thread stops
     * it with `InterruptedException`, nothing lost either.
     *
     * @throws DeliveryException when the server refuses the key or the URL misses its API
     * @throws EventQueueException when the queue's files fail
     */
    @Synchronized
    @JvmOverloads
    fun flush(maxRetries: Int = Int.MAX_VALUE): FlushSummary {
        var delivered = 0
        var duplicates = 0
        var rejected = 0
        var retries = 0
        val failures = ArrayList<DeliveryFailure>()
        fun summary(complete: Boolean) = FlushSummary(delivered, duplicates, rejected, retries, complete, failures.toList())
        fun reject(event: Event, status: Int, code: String?, message: String) {
            queue.remove(listOf(event.id))
            val failure = DeliveryFailure(event, status, code, message)
            failures.add(failure)
            rejected += 1
            onFailure(failure)
        }

        var limit = batchSize
        var attempt = 0
        while (true) {
            if (Thread.interrupted()) throw InterruptedException()
            val batch = batchOf(queue.peek(limit))
            if (batch.isEmpty()) return summary(true)
            val ids = batch.map { it.id }
            val outcome = try {
                val answer = transport.send(body(batch))
                DeliveryOutcome.classify(answer.status, answer.headers, answer.body, ids)
            } catch (error: IOException) {
                if (Thread.interrupted()) throw InterruptedException()
                DeliveryOutcome.Retry(null)
            }
            when (outcome) {
                is DeliveryOutcome.Accepted -> {
                    queue.remove(ids)
                    delivered += batch.size
                    duplicates += outcome.duplicates
                    attempt = 0
                    limit = batchSize
                }
                is DeliveryOutcome.Retry -> {
                    if (retries >= maxRetries) return summary(false)
                    val wait = outcome.afterMillis?.let { minOf(it, retry.maxRetryAfterMillis) }
                        ?: retry.delayMillis(attempt, unitRandom())
                    attempt += 1
                    retries += 1
                    sleep(wait)
                }
                is DeliveryOutcome.RefuseEvent -> {
                    reject(batch[outcome.index], outcome.status, outcome.code, outcome.message)
                    attempt = 0
                }
                is DeliveryOutcome.RefuseBatch -> {
                    if (batch.size > 1) {
                        // Halve until the server names the event or the batch is that event alone.
                        limit = batch.size / 2
                    } else {
                        reject(batch[0], outcome.status, outcome.code, outcome.message)
                        limit = batchSize
                    }
                    attempt = 0
                }
                is DeliveryOutcome.Stop -> throw outcome.error
            }
        }
    }

    companion object {
        const val DEFAULT_BATCH_SIZE = 100
        /** SPEC §5: more than 1,000 events in a batch is a 413. */
        const val MAX_BATCH_EVENTS = 1_000
        /** SPEC §5: more than 1 MiB in a batch is a 413. */
        const val MAX_BODY_BYTES = 1 shl 20

        private const val PREFIX = "{\"events\":["
        private const val SUFFIX = "]}"

        /** The oldest of `candidates` whose request stays within `MAX_BODY_BYTES` (always at least one). */
        internal fun batchOf(candidates: List<Event>): List<Event> {
            var size = PREFIX.length + SUFFIX.length
            val batch = ArrayList<Event>()
            for (event in candidates) {
                val bytes = event.json.toByteArray(Charsets.UTF_8).size + (if (batch.isEmpty()) 0 else 1)
                if (batch.isNotEmpty() && size + bytes > MAX_BODY_BYTES) break
                batch.add(event)
                size += bytes
            }
            return batch
        }

        /** `{"events":[...]}` from the stored JSON of each event, byte for byte: a retry sends exactly what the first attempt sent. */
        @JvmStatic
        fun body(batch: List<Event>): ByteArray {
            val out = ByteArrayOutputStream()
            out.write(PREFIX.toByteArray(Charsets.UTF_8))
            batch.forEachIndexed { position, event ->
                if (position > 0) out.write(0x2C) // ','
                out.write(event.json.toByteArray(Charsets.UTF_8))
            }
            out.write(SUFFIX.toByteArray(Charsets.UTF_8))
            return out.toByteArray()
        }
    }
}
