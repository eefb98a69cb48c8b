package dev.locationgate.client

import java.time.Instant
import kotlin.random.Random

/** Events.kt: the builders' JSON and the mapping from what Android hands an app (SPEC §12). */
object EventMappingTests {
    private const val FINE = "android.permission.ACCESS_FINE_LOCATION"
    private const val COARSE = "android.permission.ACCESS_COARSE_LOCATION"
    private const val BACKGROUND = "android.permission.ACCESS_BACKGROUND_LOCATION"
    private const val CAMERA = "android.permission.CAMERA"

    /** 2026-11-22T10:00:00.123Z */
    private const val NOW = 1_795_341_600_123L

    private fun events() = AndroidEvents("u-42", "d-7", TEST_INSTALL_ID, clock = { NOW })

    /** The permissionsResult of `result`, asking `shouldShowRationale`; a test failure when there is none. */
    private fun result(result: Map<String, Boolean>, shouldShowRationale: (String) -> Boolean): Event =
        events().permissionsResultFrom(result, shouldShowRationale) ?: throw TestFailure("no permissionsResult for $result")

    val cases = listOf(
        TestCase("every event has a fresh lower-case UUID, the user, the device, the time and the type") {
            val events = events()
            val first = events.appStateChanged(AppState.FOREGROUND)
            val second = events.appStateChanged(AppState.FOREGROUND)
            expect(first.id != second.id) { "two events share the id ${first.id}" }
            val json = parsed(first)
            expectEqual(json.keys.toList(), listOf("id", "userId", "deviceId", "occurredAt", "type", "data"), "fields in order")
            expectEqual(json["id"], first.id, "id")
            expect(Regex("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}").matches(first.id)) { "not a random UUID: ${first.id}" }
            expectEqual(json["userId"], "u-42", "userId")
            expectEqual(json["deviceId"], "d-7", "deviceId")
            expectEqual(json["occurredAt"], "2026-11-22T10:00:00.123Z", "occurredAt")
            expectEqual(json["type"], "appStateChanged", "type")
            expectEqual(first.type, "appStateChanged", "Event.type")
        },
        TestCase("the id is given at record time, not at send time") {
            var counter = 0
            val events = AndroidEvents("u", "d", TEST_INSTALL_ID, clock = { NOW }, newId = { counter += 1; "00000000-0000-4000-8000-00000000000$counter" })
            val event = events.locationServicesChanged(true)
            expectEqual(event.id, "00000000-0000-4000-8000-000000000001", "id")
            expectEqual(counter, 1, "ids drawn")
            expectThrows<IllegalArgumentException>("a non-UUID id") { AndroidEvents("u", "d", TEST_INSTALL_ID, newId = { "not-a-uuid" }).permissionsReset() }
        },
        TestCase("contextReported: platform android, apiLevel, targetSdk, appVersion, declaredPermissions in SPEC order") {
            val event = events().contextReported(
                34, 34, "1.2.3 (45)",
                setOf(AndroidPermission.FOREGROUND_SERVICE_LOCATION, AndroidPermission.BACKGROUND, AndroidPermission.FINE, AndroidPermission.COARSE),
                osVersion = "14")
            expectEqual(event.type, "contextReported", "type")
            val data = dataOf(event)
            expectEqual(data["platform"], "android", "platform")
            expectEqual(data["apiLevel"], 34L, "apiLevel")
            expectEqual(data["targetSdk"], 34L, "targetSdk")
            expectEqual(data["appVersion"], "1.2.3 (45)", "appVersion")
            expectEqual(data["osVersion"], "14", "osVersion")
            expectEqual(data["declaredPermissions"], listOf("coarse", "fine", "background", "foregroundServiceLocation"), "declaredPermissions")
            expectEqual(data["installId"], TEST_INSTALL_ID, "installId")
            val bare = dataOf(events().contextReported(29, 30, null, null))
            expectEqual(bare.keys, setOf("platform", "apiLevel", "targetSdk", "installId"), "optional fields left out, installId always in")
        },
        TestCase("contextReported refuses what the server would refuse") {
            val events = events()
            expectThrows<IllegalArgumentException>("apiLevel 0") { events.contextReported(0, 34, null, null) }
            expectThrows<IllegalArgumentException>("targetSdk 100") { events.contextReported(34, 100, null, null) }
            expectThrows<IllegalArgumentException>("appVersion of 65 bytes") { events.contextReported(34, 34, "a".repeat(65), null) }
            expectThrows<IllegalArgumentException>("appVersion of 33 two-byte characters (66 bytes)") { events.contextReported(34, 34, "é".repeat(33), null) }
            events.contextReported(34, 34, "é".repeat(32), null)
            expectThrows<IllegalArgumentException>("empty appVersion") { events.contextReported(34, 34, "", null) }
            expectThrows<IllegalArgumentException>("a control character") { events.contextReported(34, 34, "1.0\n", null) }
            expectThrows<IllegalArgumentException>("DEL") { events.contextReported(34, 34, "1.0\u007F", null) }
            expectThrows<IllegalArgumentException>("a lone surrogate") { events.contextReported(34, 34, "1.0\uD800", null) }
            expectThrows<IllegalArgumentException>("osVersion Tiramisu") { events.contextReported(34, 34, null, null, osVersion = "Tiramisu") }
            expectEqual(AndroidEvents.osVersionOrNull("8.1.0"), "8.1.0", "osVersionOrNull 8.1.0")
            expectEqual(AndroidEvents.osVersionOrNull("14"), "14", "osVersionOrNull 14")
            expectEqual(AndroidEvents.osVersionOrNull("UpsideDownCake"), null, "osVersionOrNull of a code name")
            expectEqual(AndroidEvents.osVersionOrNull("1.2.3.4"), null, "osVersionOrNull of four numbers")
            expectThrows<IllegalArgumentException>("a userId with a space") { AndroidEvents("u 1", "d", TEST_INSTALL_ID) }
            expectThrows<IllegalArgumentException>("a deviceId of 129 characters") { AndroidEvents("u", "d".repeat(129), TEST_INSTALL_ID) }
            AndroidEvents("user@example.com", "a:b.c_d-e", TEST_INSTALL_ID)
        },
        TestCase("installId (SPEC I1) goes into every contextReported and no other event; one the server would refuse is refused here") {
            val events = AndroidEvents("u", "d", "another-install", clock = { NOW })
            expectEqual(dataOf(events.contextReported(34, 34, "1.0", null))["installId"], "another-install", "installId in the context")
            expectEqual(dataOf(events.contextReported(35, 35, "1.1", null))["installId"], "another-install", "the same in the next context")
            for (other in listOf(events.appStateChanged(AppState.FOREGROUND), events.permissionsObserved(emptySet()), events.permissionsReset())) {
                expect("installId" !in dataOf(other)) { "${other.type} carries installId: ${other.json}" }
            }
            expectThrows<IllegalArgumentException>("an empty installId") { AndroidEvents("u", "d", "") }
            expectThrows<IllegalArgumentException>("an installId of 65 bytes") { AndroidEvents("u", "d", "a".repeat(65)) }
            expectThrows<IllegalArgumentException>("an installId with a control character") { AndroidEvents("u", "d", "id\n") }
            AndroidEvents("u", "d", "a".repeat(64))
        },
        TestCase("appVersion text with quotes, backslashes and non-ASCII is escaped and reads back unaltered") {
            val version = "1.0 \"beta\" \\ café 🚀 / end"
            val event = events().contextReported(34, 34, version, null)
            expectEqual(dataOf(event)["appVersion"], version, "appVersion read back")
            expect(event.json.contains("\\\"beta\\\" \\\\ café 🚀")) { "escaping: ${event.json}" }
        },
        TestCase("permissionsRequested: SPEC names in SPEC order; empty or foregroundServiceLocation refused") {
            val event = events().permissionsRequested(setOf(AndroidPermission.FINE, AndroidPermission.COARSE))
            expectEqual(dataOf(event), mapOf<String, Any?>("permissions" to listOf("coarse", "fine")), "data")
            expectThrows<IllegalArgumentException>("empty") { events().permissionsRequested(emptySet()) }
            expectThrows<IllegalArgumentException>("foregroundServiceLocation") { events().permissionsRequested(setOf(AndroidPermission.FOREGROUND_SERVICE_LOCATION)) }
        },
        TestCase("RequestMultiplePermissions {FINE: true, COARSE: true} → granted [coarse, fine], denied [], rationale []") {
            val event = result(mapOf(FINE to true, COARSE to true)) { false }
            expectEqual(event.type, "permissionsResult", "type")
            val data = dataOf(event)
            expectEqual(data["granted"], listOf("coarse", "fine"), "granted")
            expectEqual(data["denied"], listOf<String>(), "denied")
            expectEqual(data["rationale"], listOf<String>(), "rationale: sent when empty too")
            expectEqual(data["interrupted"], false, "interrupted")
        },
        TestCase("approximate chosen on API 31+: {FINE: false, COARSE: true} → granted [coarse], denied [fine]; rationale from the activity") {
            val data = dataOf(result(mapOf(FINE to false, COARSE to true)) { it == FINE })
            expectEqual(data["granted"], listOf("coarse"), "granted")
            expectEqual(data["denied"], listOf("fine"), "denied")
            expectEqual(data["rationale"], listOf("fine"), "rationale")
        },
        TestCase("an empty result map is an interrupted request: interrupted true, empty arrays, rationale included, nothing asked") {
            var asked = 0
            val data = dataOf(result(emptyMap()) { asked += 1; true })
            expectEqual(data, mapOf<String, Any?>("granted" to listOf<String>(), "denied" to listOf<String>(), "rationale" to listOf<String>(), "interrupted" to true), "data")
            expectEqual(asked, 0, "shouldShowRationale calls")
        },
        TestCase("other permissions are left out; a result with no location permission reports nothing") {
            expectEqual(events().permissionsResultFrom(mapOf(CAMERA to true)) { true }, null, "camera only")
            val data = dataOf(result(mapOf(CAMERA to true, BACKGROUND to false)) { true })
            expectEqual(data["granted"], listOf<String>(), "granted")
            expectEqual(data["denied"], listOf("background"), "denied")
            expectEqual(data["rationale"], listOf("background"), "rationale: location permissions only")
        },
        TestCase("rationale is worked out by the client: it asks shouldShowRationale about each location permission of the result, once, and sends those it answers true for") {
            val asked = ArrayList<String>()
            val data = dataOf(result(mapOf(COARSE to false, FINE to false, CAMERA to false)) { name ->
                asked.add(name)
                name == COARSE
            })
            expectEqual(asked.sorted(), listOf(COARSE, FINE).sorted(), "asked about")
            expectEqual(data["denied"], listOf("coarse", "fine"), "denied")
            expectEqual(data["rationale"], listOf("coarse"), "rationale")
        },
        TestCase("D5 from the client: a denial (rationale now true) and a dismissal (still false) differ only in rationale, and both are sent") {
            val denied = dataOf(result(mapOf(COARSE to false, FINE to false)) { true })
            val dismissed = dataOf(result(mapOf(COARSE to false, FINE to false)) { false })
            expectEqual(denied["denied"], dismissed["denied"], "the same denied set")
            expectEqual(denied["rationale"], listOf("coarse", "fine"), "denial: rationale")
            expectEqual(dismissed["rationale"], listOf<String>(), "dismissal: rationale")
        },
        TestCase("onRequestPermissionsResult's arrays: PERMISSION_GRANTED (0) is granted; empty arrays are interrupted; arrays of different lengths are refused") {
            val asked = ArrayList<String>()
            val event = events().permissionsResultFrom(arrayOf(COARSE, FINE, BACKGROUND), intArrayOf(0, -1, -1)) { name ->
                asked.add(name)
                name == BACKGROUND
            } ?: throw TestFailure("no event for a location result")
            val data = dataOf(event)
            expectEqual(data["granted"], listOf("coarse"), "granted")
            expectEqual(data["denied"], listOf("fine", "background"), "denied")
            expectEqual(data["rationale"], listOf("background"), "rationale")
            expectEqual(asked.sorted(), listOf(COARSE, FINE, BACKGROUND).sorted(), "asked about")
            val interrupted = events().permissionsResultFrom(arrayOf(), intArrayOf()) { true } ?: throw TestFailure("no event for empty arrays")
            expectEqual(dataOf(interrupted)["interrupted"], true, "interrupted")
            expectEqual(dataOf(interrupted)["rationale"], listOf<String>(), "interrupted rationale")
            expectThrows<IllegalArgumentException>("lengths differ") { events().permissionsResultFrom(arrayOf(COARSE), intArrayOf()) { false } }
        },
        TestCase("permissionsResult always writes rationale, in SPEC order") {
            val data = dataOf(events().permissionsResult(emptySet(), setOf(AndroidPermission.BACKGROUND, AndroidPermission.FINE), setOf(AndroidPermission.BACKGROUND, AndroidPermission.FINE)))
            expectEqual(data["rationale"], listOf("fine", "background"), "rationale")
            expectEqual(data.keys.toList(), listOf("granted", "denied", "rationale", "interrupted"), "fields in order")
        },
        TestCase("permissionsResult refuses a permission both granted and denied") {
            expectThrows<IllegalArgumentException>("both") { events().permissionsResult(setOf(AndroidPermission.FINE), setOf(AndroidPermission.FINE), emptySet()) }
        },
        TestCase("checkSelfPermission results → permissionsObserved: PERMISSION_GRANTED (0) only, location permissions only") {
            val data = dataOf(events().permissionsObservedFrom(mapOf(COARSE to 0, FINE to -1, BACKGROUND to -1, CAMERA to 0), locationEnabled = true))
            expectEqual(data, mapOf<String, Any?>("granted" to listOf("coarse"), "locationEnabled" to true), "data")
            val asked = ArrayList<String>()
            val observed = events().permissionsObservedFrom(null) { name ->
                asked.add(name)
                if (name == BACKGROUND) -1 else 0
            }
            expectEqual(asked, listOf(COARSE, FINE, BACKGROUND), "asked about")
            expectEqual(dataOf(observed), mapOf<String, Any?>("granted" to listOf("coarse", "fine")), "data without locationEnabled")
            expectEqual(dataOf(events().permissionsObservedFrom(emptyMap()))["granted"], listOf<String>(), "nothing granted")
        },
        TestCase("appStateChanged carries foregroundService (never the iOS backgroundIndicator)") {
            expectEqual(dataOf(events().appStateChanged(AppState.BACKGROUND, foregroundService = true)),
                mapOf<String, Any?>("state" to "background", "foregroundService" to true), "background with a service")
            expectEqual(dataOf(events().appStateChanged(AppState.TERMINATED)),
                mapOf<String, Any?>("state" to "terminated", "foregroundService" to false), "terminated")
        },
        TestCase("settingsChanged, locationServicesChanged, permissionsReset") {
            expectEqual(dataOf(events().settingsChanged(SettingsAuthorization.ASK_EVERY_TIME, null)), mapOf<String, Any?>("authorization" to "askEveryTime"), "askEveryTime")
            expectEqual(dataOf(events().settingsChanged(null, false)), mapOf<String, Any?>("preciseLocation" to false), "precise off")
            expectEqual(dataOf(events().settingsChanged(SettingsAuthorization.WHILE_USING, true)),
                mapOf<String, Any?>("authorization" to "whileUsing", "preciseLocation" to true), "both")
            expectThrows<IllegalArgumentException>("neither") { events().settingsChanged(null, null) }
            expectEqual(dataOf(events().locationServicesChanged(false)), mapOf<String, Any?>("enabled" to false), "location services")
            val reset = events().permissionsReset()
            expectEqual(reset.type, "permissionsReset", "type")
            expectEqual(dataOf(reset), mapOf<String, Any?>("reason" to "unusedApp"), "reset")
        },
        TestCase("RFC 3339: milliseconds, UTC, every day of 400 years and random times agree with java.time") {
            expectEqual(Rfc3339.format(0), "1970-01-01T00:00:00.000Z", "epoch")
            expectEqual(Rfc3339.format(951_782_400_000), "2000-02-29T00:00:00.000Z", "leap day")
            expectEqual(Rfc3339.format(Rfc3339.END_MILLIS - 1), "9999-12-31T23:59:59.999Z", "last millisecond")
            expectThrows<IllegalArgumentException>("before 1970") { Rfc3339.format(-1) }
            expectThrows<IllegalArgumentException>("year 10000") { Rfc3339.format(Rfc3339.END_MILLIS) }
            val random = Random(7)
            for (day in 0 until 146_097) {
                val millis = day * 86_400_000L + random.nextLong(86_400_000L)
                val text = Rfc3339.format(millis)
                expectEqual(Instant.parse(text).toEpochMilli(), millis, "day $day: $text")
            }
            repeat(10_000) {
                val millis = random.nextLong(Rfc3339.END_MILLIS)
                expectEqual(Instant.parse(Rfc3339.format(millis)).toEpochMilli(), millis, "$millis")
            }
        },
        TestCase("AndroidPermission by manifest name") {
            expectEqual(AndroidPermission.fromManifestName(FINE), AndroidPermission.FINE, "fine")
            expectEqual(AndroidPermission.fromManifestName("ACCESS_FINE_LOCATION"), null, "a short name")
            expectEqual(AndroidPermission.RUNTIME.map { it.specName }, listOf("coarse", "fine", "background"), "runtime")
        }
    )
}

/** Json.kt: escaping and the strict reader. */
object JsonTests {
    val cases = listOf(
        TestCase("strings: quotes, backslashes, control characters, line separators escaped; surrogate pairs kept") {
            expectEqual(Json.quote("a\"b\\c/d"), "\"a\\\"b\\\\c/d\"", "quote and backslash")
            expectEqual(Json.quote("\n\r\t\b\u000C\u0001\u001F\u007F"), "\"\\n\\r\\t\\b\\f\\u0001\\u001f\\u007f\"", "controls")
            expectEqual(Json.quote("\u2028\u2029"), "\"\\u2028\\u2029\"", "line separators")
            expectEqual(Json.quote("🚀é"), "\"🚀é\"", "non-ASCII kept")
            expectThrows<IllegalArgumentException>("lone high surrogate") { Json.quote("a\uD83D") }
            expectThrows<IllegalArgumentException>("lone low surrogate") { Json.quote("\uDE80b") }
            val nasty = "\u0000\"\\\u001F\u007F\u2028🚀 end"
            expectEqual(Json.parse(Json.quote(nasty)), nasty, "round trip")
        },
        TestCase("the reader is strict: one value, nothing after it, no leniency") {
            expectEqual(Json.parse(" {\"a\": [1, -2.5e1, true, false, null, \"\\u00e9\\ud83d\\ude80\"]} "),
                mapOf("a" to listOf(1L, -25.0, true, false, null, "é🚀")), "a document")
            for (bad in listOf("", "{", "{}x", "[1,]", "{\"a\":1,}", "01", "1.", ".5", "+1", "'a'", "\"a\nb\"", "\"\\x\"", "nul", "[1 2]", "{a:1}", "NaN", "\"\\u12\"")) {
                expectThrows<JsonException>("not JSON: $bad") { Json.parse(bad) }
            }
            expectThrows<JsonException>("too deep") { Json.parse("[".repeat(100) + "]".repeat(100)) }
            expectThrows<JsonException>("not UTF-8") { Json.parse(byteArrayOf(0x22, 0xC3.toByte(), 0x22)) }
            expectEqual(Json.parse("12345678901234567890"), 1.2345678901234567e19, "a number beyond Long")
        }
    )
}
