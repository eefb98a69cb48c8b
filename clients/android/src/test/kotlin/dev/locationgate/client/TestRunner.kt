package dev.locationgate.client

import java.io.File
import kotlin.system.exitProcess

/**
 * A plain `main` test runner, so that the tests need nothing but the Kotlin standard library:
 * every test is a named function whose failed expectation throws `TestFailure`. Prints each
 * test's result and exits non-zero when any failed.
 */
class TestFailure(message: String) : AssertionError(message)

class TestCase(val name: String, val body: () -> Unit)

/** An install id for builders in tests that do not open a queue (a queue makes its own, `EventQueue.installId`). */
const val TEST_INSTALL_ID = "6f1c9a52-8a3e-4c2b-9d7e-5b0a4f3e2d1c"

fun expect(condition: Boolean, message: () -> String) {
    if (!condition) throw TestFailure(message())
}

fun <T> expectEqual(actual: T, expected: T, what: String) {
    if (actual != expected) throw TestFailure("$what: expected <$expected>, got <$actual>")
}

inline fun <reified E : Throwable> expectThrows(what: String, body: () -> Unit): E {
    try {
        body()
    } catch (error: Throwable) {
        if (error is E) return error
        throw TestFailure("$what: expected ${E::class.java.simpleName}, got $error")
    }
    throw TestFailure("$what: expected ${E::class.java.simpleName}, nothing was thrown")
}

/** A fresh directory, deleted after `body`. */
fun <T> withTemporaryDirectory(body: (File) -> T): T {
    val directory = java.nio.file.Files.createTempDirectory("locgate-android-").toFile()
    try {
        return body(directory)
    } finally {
        directory.deleteRecursively()
    }
}

/** The parsed JSON of an event, for checks. */
@Suppress("UNCHECKED_CAST")
fun parsed(event: Event): Map<String, Any?> = Json.parse(event.json) as Map<String, Any?>

@Suppress("UNCHECKED_CAST")
fun dataOf(event: Event): Map<String, Any?> = parsed(event)["data"] as Map<String, Any?>

fun main(args: Array<String>) {
    val filter = args.firstOrNull()
    val suites = listOf(
        "mapping" to EventMappingTests.cases,
        "button" to LocationButtonTests.cases,
        "json" to JsonTests.cases,
        "queue" to EventQueueTests.cases,
        "install" to InstallIdTests.cases,
        "sender" to EventSenderTests.cases,
        "transport" to HttpTransportTests.cases
    )
    val failed = ArrayList<String>()
    var passed = 0
    val started = System.nanoTime()
    for ((suite, cases) in suites) {
        for (case in cases) {
            val name = "$suite: ${case.name}"
            if (filter != null && !name.contains(filter)) continue
            try {
                case.body()
                passed += 1
                println("PASS  $name")
            } catch (error: Throwable) {
                failed.add(name)
                println("FAIL  $name\n      $error")
                if (error !is TestFailure) error.printStackTrace(System.out)
            }
        }
    }
    val server = ServerTests.fromEnvironment()
    if (server == null) {
        println("SKIP  server: LOCGATE_URL and LOCGATE_ADMIN_KEY are not both set")
    } else {
        for (case in server.cases()) {
            val name = "server: ${case.name}"
            try {
                case.body()
                passed += 1
                println("PASS  $name")
            } catch (error: Throwable) {
                failed.add(name)
                println("FAIL  $name\n      $error")
                if (error !is TestFailure) error.printStackTrace(System.out)
                break // the server steps build on each other
            }
        }
    }
    val millis = (System.nanoTime() - started) / 1_000_000
    println("${passed} passed, ${failed.size} failed in $millis ms")
    if (failed.isNotEmpty()) {
        println("Failed:")
        for (name in failed) println("  $name")
        exitProcess(1)
    }
}
