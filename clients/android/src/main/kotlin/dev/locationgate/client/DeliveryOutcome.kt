package dev.locationgate.client

/**
 * Why the sender stopped sending. The queue keeps every event; nothing was dropped.
 */
sealed class DeliveryException(val status: Int, message: String) : Exception(message) {
    /**
     * 401 or 403: the key is wrong, revoked, or lacks the `ingest` scope (or a device-bound key's
     * token expired). Retrying would not fix it; fix the key or token and flush again.
     */
    class Unauthorized(status: Int, val serverMessage: String) :
        DeliveryException(status, "the server refused the key ($status): $serverMessage")

    /**
     * The server's own JSON error with a status the sender has no rule for (404, 405...): the base
     * URL reaches a LocationGate server, but not its API. Or a status outside 200-599.
     */
    class UnexpectedStatus(status: Int, val serverMessage: String) :
        DeliveryException(status, "unexpected HTTP status $status: $serverMessage")
}

/**
 * What the sender does with one answer to `POST /v1/events` (SPEC §5), decided in one place, with
 * the same rules as the Swift client's `DeliveryOutcome`.
 *
 * An answer deletes events only when it is recognisably the server's: a 2xx whose body is
 * `{"results": [...]}` with one result per event sent, ids in the order sent, or a refusal whose
 * body is the server's JSON error `{"error": {"code", "message", "index"?}}` with a code that says
 * the batch itself is wrong. Anything else between the device and the server can answer too (a
 * captive portal's login page, a proxy's error page, a redirect): such an answer is retried with
 * backoff, and nothing is deleted.
 */
sealed class DeliveryOutcome {
    /** The server's 2xx: every event of the batch is stored, `duplicates` of them by an earlier attempt. */
    data class Accepted(val duplicates: Int) : DeliveryOutcome()

    /** 408, 429, 5xx, a 3xx, or an answer that is not the server's: the same batch again, after Retry-After if given. */
    data class Retry(val afterMillis: Long?) : DeliveryOutcome()

    /** The server's refusal naming the event at `index`: drop that one, send the rest. */
    data class RefuseEvent(val index: Int, val status: Int, val code: String, val message: String) : DeliveryOutcome()

    /** The server's refusal naming no event: narrow the batch down until one is named or alone. */
    data class RefuseBatch(val status: Int, val code: String, val message: String) : DeliveryOutcome()

    /** 401, 403, the server's own error with a status that has no rule, or a status outside 2xx-5xx: stop. */
    data class Stop(val error: DeliveryException) : DeliveryOutcome()

    companion object {
        /**
         * The codes of SPEC §5 that mean the batch itself is wrong and will be refused again however
         * often it is sent: `malformedJSON`, `invalidRequest` (400), `versionConflict` and
         * `idConflict` (409: the event's id is stored with other content), `tooLarge` (413),
         * `validationFailed`, `ruleViolation` (422).
         */
        @JvmField
        val REFUSAL_CODES: Set<String> = setOf("malformedJSON", "invalidRequest", "versionConflict", "idConflict", "tooLarge", "validationFailed", "ruleViolation")

        /**
         * @param headers the response headers, names in any case
         * @param sent the ids of the batch's events, in the order sent
         */
        @JvmStatic
        fun classify(status: Int, headers: Map<String, String>, body: ByteArray, sent: List<String>): DeliveryOutcome {
            when (status) {
                in 200..299 -> {
                    val duplicates = acceptedDuplicates(body, sent) ?: return Retry(null)
                    return Accepted(duplicates)
                }
                // Redirects are not followed (a captive portal sends the request elsewhere) and are not the server's answer.
                in 300..399 -> return Retry(null)
                408, 429, in 500..599 -> return Retry(retryAfterMillis(headers))
                401, 403 -> {
                    // A device-bound key's token does not cover the event at `index`: it can never be sent with this token.
                    val refusal = serverError(body)
                    if (status == 403 && refusal != null && refusal.code == "forbidden" && refusal.index != null && refusal.index in sent.indices) {
                        return RefuseEvent(refusal.index, status, refusal.code, refusal.message)
                    }
                    return Stop(DeliveryException.Unauthorized(status, looseMessage(body) ?: "status $status"))
                }
                400, 409, 413, 422 -> {
                    // A proxy's page, an empty body, some other JSON: not the server's refusal.
                    val refusal = serverError(body)
                    if (refusal == null || refusal.code !in REFUSAL_CODES) return Retry(null)
                    if (refusal.index != null && refusal.index in sent.indices) {
                        return RefuseEvent(refusal.index, status, refusal.code, refusal.message)
                    }
                    return RefuseBatch(status, refusal.code, refusal.message)
                }
                in 400..499 -> {
                    // The server's own error (404, 405...): the base URL reaches a LocationGate server
                    // but not its API, and retrying will not change that. Anything else is an answer
                    // from something in between.
                    val error = serverError(body) ?: return Retry(null)
                    return Stop(DeliveryException.UnexpectedStatus(status, error.message))
                }
                else -> {
                    val text = String(body.copyOf(minOf(body.size, 200)), Charsets.UTF_8)
                    return Stop(DeliveryException.UnexpectedStatus(status, looseMessage(body) ?: text))
                }
            }
        }

        private val SECONDS = Regex("[0-9]+(\\.[0-9]+)?")

        /** Retry-After in seconds (what LocationGate sends), in milliseconds; the HTTP-date form is left to backoff. */
        @JvmStatic
        fun retryAfterMillis(headers: Map<String, String>): Long? {
            val value = headers.entries.firstOrNull { it.key.equals("retry-after", ignoreCase = true) }?.value ?: return null
            val text = value.trim()
            if (!SECONDS.matches(text)) return null
            val seconds = text.toDoubleOrNull() ?: return null
            if (seconds.isInfinite() || seconds > 1e12) return Long.MAX_VALUE
            return (seconds * 1000).toLong()
        }

        /**
         * The number of duplicates when `body` is the server's answer to the batch `sent`: one
         * result per event, each an object whose `id` is the id of the event at its position and
         * whose `duplicate`, if any, is a boolean. Null otherwise.
         */
        @JvmStatic
        fun acceptedDuplicates(body: ByteArray, sent: List<String>): Int? {
            val answer = Json.parseOrNull(body) as? Map<*, *> ?: return null
            val results = answer["results"] as? List<*> ?: return null
            if (results.size != sent.size) return null
            var duplicates = 0
            for ((position, item) in results.withIndex()) {
                val result = item as? Map<*, *> ?: return null
                val id = result["id"] as? String ?: return null
                if (!id.equals(sent[position], ignoreCase = true)) return null
                when (val duplicate = result["duplicate"]) {
                    null -> {}
                    is Boolean -> if (duplicate) duplicates += 1
                    else -> return null
                }
            }
            return duplicates
        }

        /** The server's error body: `code` and `message` strings, `index` an integer, null or absent. */
        class ServerError(val code: String, val message: String, val index: Int?)

        /** The server's error body, or null when `body` is anything else. */
        @JvmStatic
        fun serverError(body: ByteArray): ServerError? {
            val answer = Json.parseOrNull(body) as? Map<*, *> ?: return null
            val error = answer["error"] as? Map<*, *> ?: return null
            val code = error["code"] as? String ?: return null
            val message = error["message"] as? String ?: return null
            val index = when (val raw = error["index"]) {
                null -> null
                is Long -> if (raw in Int.MIN_VALUE..Int.MAX_VALUE) raw.toInt() else return null
                is Double -> if (raw == Math.rint(raw) && raw >= Int.MIN_VALUE && raw <= Int.MAX_VALUE) raw.toInt() else return null
                else -> return null
            }
            return ServerError(code, message, index)
        }

        /** The message of an error body, the server's or one like it, for a report. */
        private fun looseMessage(body: ByteArray): String? {
            val answer = Json.parseOrNull(body) as? Map<*, *> ?: return null
            val error = answer["error"] as? Map<*, *> ?: return null
            return error["message"] as? String
        }
    }
}
