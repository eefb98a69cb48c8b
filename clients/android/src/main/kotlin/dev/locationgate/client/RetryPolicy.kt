package dev.locationgate.client

/**
 * How long the sender waits before retrying a batch that got no answer (or an answer that was not
 * the server's, or a 429/503 without Retry-After): exponential backoff with full jitter, as the
 * Swift client.
 *
 * The n-th consecutive retry waits a uniformly random time in `0..min(cap, base * 2^n)`. The
 * randomness matters more than the growth: after a server restart every device retries, and
 * without jitter they would all come back in the same instant, again and again.
 *
 * @param baseMillis the first window, 0.5 s
 * @param capMillis the largest window, 60 s
 * @param maxRetryAfterMillis the longest Retry-After honoured (a larger one is read as this, so
 *   that a misconfigured proxy does not silence a device for days), 1 hour
 */
data class RetryPolicy @JvmOverloads constructor(
    val baseMillis: Long = 500,
    val capMillis: Long = 60_000,
    val maxRetryAfterMillis: Long = 3_600_000
) {
    /** The window of the `attempt`-th consecutive retry (0 for the first), in milliseconds. */
    fun windowMillis(attempt: Int): Long {
        val factor = Math.pow(2.0, attempt.coerceIn(0, 30).toDouble())
        return minOf(capMillis.toDouble(), baseMillis * factor).toLong()
    }

    /** The wait before the `attempt`-th retry: the window scaled by `unitRandom`, a number in 0..1 (clamped). */
    fun delayMillis(attempt: Int, unitRandom: Double): Long {
        val fraction = if (unitRandom.isNaN()) 0.0 else unitRandom.coerceIn(0.0, 1.0)
        return (windowMillis(attempt) * fraction).toLong()
    }
}
