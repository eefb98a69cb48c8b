package dev.locationgate.client

/** A nested error class, whose name holds a `$`. */
class ButtonTestErrors {
    class Nested : IllegalStateException("nested")
}

/** An error class whose name is not ASCII. */
class StörungException : RuntimeException("non-ASCII")

/** A stand-in for `android.app.permissionui.LocationButtonSession`. */
class FakeButtonSession(val name: String)

/**
 * LocationButton.kt, ManifestPermissions.kt and the location button's events in Events.kt
 * (SPEC §12, "The location button"): the events' JSON, the recorder in front of the app's
 * `LocationButtonClient` callbacks, the error's class name as `cause`, and the manifest read
 * from `PackageInfo` into the context.
 */
object LocationButtonTests {
    private const val FINE = "android.permission.ACCESS_FINE_LOCATION"
    private const val COARSE = "android.permission.ACCESS_COARSE_LOCATION"
    private const val BACKGROUND = "android.permission.ACCESS_BACKGROUND_LOCATION"
    private const val SERVICE = "android.permission.FOREGROUND_SERVICE_LOCATION"
    private const val BUTTON = "android.permission.USE_LOCATION_BUTTON"
    private const val INTERNET = "android.permission.INTERNET"

    /** `PackageInfo.REQUESTED_PERMISSION_GRANTED`, set beside the location button's flag on a granted permission. */
    private const val GRANTED_FLAG = 0x2

    /** `PackageInfo.REQUESTED_PERMISSION_NEVER_FOR_LOCATION`, another usesPermissionFlags bit. */
    private const val NEVER_FOR_LOCATION_FLAG = 0x10000

    /** 2026-11-22T10:00:00.123Z */
    private const val NOW = 1_795_341_600_123L

    private val CAUSE = Regex("[A-Za-z0-9._$-]{1,128}")

    private fun events(): AndroidEvents {
        var counter = 0
        return AndroidEvents("u-42", "d-7", TEST_INSTALL_ID, clock = { NOW }, newId = {
            counter += 1
            "00000000-0000-4000-8000-" + counter.toString().padStart(12, '0')
        })
    }

    /** A recorder whose events go to `log` as "record type data", and the app's callbacks as "app ...". */
    private class Harness(apiLevel: Int = 37, declared: Set<AndroidPermission>? = null, failing: Boolean = false) {
        val log = ArrayList<String>()
        val recorded = ArrayList<Event>()
        val recordingErrors = ArrayList<Exception>()
        val recorder = LocationButtonRecorder(events(), { event: Event ->
            if (failing) throw EventQueueFullException()
            recorded.add(event)
            log.add("record ${event.type} ${Json.parse(event.json).let { (it as Map<*, *>)["data"] }}")
        }, apiLevel, declared) { recordingErrors.add(it) }
        val sessions = ArrayList<FakeButtonSession>()
        val client: LocationButtonCallbacks<FakeButtonSession> = recorder.client(object : LocationButtonCallbacks<FakeButtonSession> {
            override fun onSessionOpened(session: FakeButtonSession) {
                sessions.add(session)
                log.add("app opened ${session.name}")
            }

            override fun onSessionError(cause: Throwable) {
                log.add("app error ${cause.javaClass.simpleName}")
            }

            override fun onPermissionResult(isGranted: Boolean) {
                log.add("app result $isGranted")
            }
        })
    }

    val cases = listOf(
        TestCase("locationButtonSession and locationButtonResult: the JSON SPEC §12 gives, byte for byte") {
            val events = events()
            expectEqual(events.locationButtonSession(LocationButtonSessionState.OPENED).json,
                "{\"id\":\"00000000-0000-4000-8000-000000000001\",\"userId\":\"u-42\",\"deviceId\":\"d-7\",\"occurredAt\":\"2026-11-22T10:00:00.123Z\"," +
                    "\"type\":\"locationButtonSession\",\"data\":{\"state\":\"opened\"}}", "opened")
            expectEqual(events.locationButtonSession(LocationButtonSessionState.CLOSED).json,
                "{\"id\":\"00000000-0000-4000-8000-000000000002\",\"userId\":\"u-42\",\"deviceId\":\"d-7\",\"occurredAt\":\"2026-11-22T10:00:00.123Z\"," +
                    "\"type\":\"locationButtonSession\",\"data\":{\"state\":\"closed\"}}", "closed")
            expectEqual(events.locationButtonSession(LocationButtonSessionState.FAILED, "java.lang.SecurityException").json,
                "{\"id\":\"00000000-0000-4000-8000-000000000003\",\"userId\":\"u-42\",\"deviceId\":\"d-7\",\"occurredAt\":\"2026-11-22T10:00:00.123Z\"," +
                    "\"type\":\"locationButtonSession\",\"data\":{\"state\":\"failed\",\"cause\":\"java.lang.SecurityException\"}}", "failed with a cause")
            expectEqual(events.locationButtonSession(LocationButtonSessionState.FAILED).json,
                "{\"id\":\"00000000-0000-4000-8000-000000000004\",\"userId\":\"u-42\",\"deviceId\":\"d-7\",\"occurredAt\":\"2026-11-22T10:00:00.123Z\"," +
                    "\"type\":\"locationButtonSession\",\"data\":{\"state\":\"failed\"}}", "failed without a cause")
            expectEqual(events.locationButtonResult(true).json,
                "{\"id\":\"00000000-0000-4000-8000-000000000005\",\"userId\":\"u-42\",\"deviceId\":\"d-7\",\"occurredAt\":\"2026-11-22T10:00:00.123Z\"," +
                    "\"type\":\"locationButtonResult\",\"data\":{\"granted\":true}}", "granted")
            expectEqual(dataOf(events.locationButtonResult(false)), mapOf<String, Any?>("granted" to false), "refused")
            expectEqual(dataOf(events.locationButtonSessionFailed(ButtonTestErrors.Nested())),
                mapOf<String, Any?>("state" to "failed", "cause" to "dev.locationgate.client.ButtonTestErrors\$Nested"), "failed from an error")
            expectEqual(dataOf(events.locationButtonSessionFailed(null)), mapOf<String, Any?>("state" to "failed"), "failed from no error")
        },
        TestCase("locationButtonSession refuses what the server refuses: a cause with opened or closed, or outside [A-Za-z0-9._\$-]{1,128}") {
            val events = events()
            expectThrows<IllegalArgumentException>("cause with opened") { events.locationButtonSession(LocationButtonSessionState.OPENED, "java.lang.RuntimeException") }
            expectThrows<IllegalArgumentException>("cause with closed") { events.locationButtonSession(LocationButtonSessionState.CLOSED, "java.lang.RuntimeException") }
            for (bad in listOf("", "a".repeat(129), "Foo/Bar", "Foo Bar", "Störung", "a\nb", "a:b", "a@b")) {
                expectThrows<IllegalArgumentException>("cause ${Json.quote(bad)}") { events.locationButtonSession(LocationButtonSessionState.FAILED, bad) }
            }
            events.locationButtonSession(LocationButtonSessionState.FAILED, "a".repeat(128))
            events.locationButtonSession(LocationButtonSessionState.FAILED, "Outer\$Inner\$1.x_y-z")
        },
        TestCase("the cause is the error's class name, made safe: other characters become _, a long name keeps its end") {
            expectEqual(AndroidEvents.locationButtonCause(SecurityException("Unable to bind location button service.")), "java.lang.SecurityException", "SecurityException")
            expectEqual(AndroidEvents.locationButtonCause(ButtonTestErrors.Nested()), "dev.locationgate.client.ButtonTestErrors\$Nested", "a nested class keeps its \$")
            expectEqual(AndroidEvents.locationButtonCause(StörungException()), "dev.locationgate.client.St_rungException", "a non-ASCII letter")
            val anonymous = AndroidEvents.locationButtonCause(object : RuntimeException() {})
            expect(anonymous.startsWith("dev.locationgate.client.LocationButtonTests") && CAUSE.matches(anonymous)) { "an anonymous class: $anonymous" }
            expectEqual(AndroidEvents.causeFromClassName("com.example.Foo\$\$Lambda\$14/0x0000000800c0b000"), "com.example.Foo\$\$Lambda\$14_0x0000000800c0b000", "a hidden class's /")
            expectEqual(AndroidEvents.causeFromClassName("a\uD83D\uDE00b c"), "a_b_c", "a surrogate pair is one _")
            expectEqual(AndroidEvents.causeFromClassName("x\uD800"), "x_", "a lone surrogate")
            expectEqual(AndroidEvents.causeFromClassName(""), "_", "an empty name")
            val longPackage = "com." + "segment".repeat(30) + ".deep.VeryLongSessionError"
            val fromLong = AndroidEvents.causeFromClassName(longPackage)
            expectEqual(fromLong, "deep.VeryLongSessionError", "a long package: whole segments from the end")
            val oneSegment = "E".repeat(300)
            expectEqual(AndroidEvents.causeFromClassName(oneSegment), "E".repeat(128), "one segment of 300: its last 128")
            val boundary = "p".repeat(50) + "." + "Q".repeat(128)
            expectEqual(AndroidEvents.causeFromClassName(boundary), "Q".repeat(128), "the last 128 begin a segment")
            val exact = "a.".repeat(63) + "Zz"
            expectEqual(AndroidEvents.causeFromClassName(exact), exact, "128 characters are kept whole")
            for (name in listOf(longPackage, oneSegment, boundary, exact, "é".repeat(200), "a/b".repeat(100), "\uD83D\uDE00".repeat(200))) {
                val cause = AndroidEvents.causeFromClassName(name)
                expect(CAUSE.matches(cause)) { "not a valid cause: $cause (from ${name.take(40)}...)" }
                events().locationButtonSession(LocationButtonSessionState.FAILED, cause)
            }
        },
        TestCase("the recorder records each callback, then forwards it to the app's own, in Android's order") {
            val harness = Harness()
            val session = FakeButtonSession("s1")
            harness.client.onSessionOpened(session)
            harness.client.onPermissionResult(false)
            harness.client.onPermissionResult(true)
            harness.recorder.sessionClosed()
            harness.client.onSessionOpened(FakeButtonSession("s2"))
            harness.client.onSessionError(SecurityException("Service died, Session closed."))
            expectEqual(harness.log, listOf(
                "record locationButtonSession {state=opened}",
                "app opened s1",
                "record locationButtonResult {granted=false}",
                "app result false",
                "record locationButtonResult {granted=true}",
                "app result true",
                "record locationButtonSession {state=closed}",
                "record locationButtonSession {state=opened}",
                "app opened s2",
                "record locationButtonSession {state=failed, cause=java.lang.SecurityException}",
                "app error SecurityException"
            ), "log")
            expect(harness.sessions[0] === session) { "the app got another session object" }
            expectEqual(harness.recorder.isSessionOpen, false, "session open after the error")
            expectEqual(harness.recorded.map { it.type }.distinct(), listOf("locationButtonSession", "locationButtonResult"), "types")
            expectEqual(harness.recordingErrors, listOf<Exception>(), "recording errors")
        },
        TestCase("the recorder reports one session at a time: opened once while open, closed only after opened, failed always and ends it") {
            val harness = Harness()
            harness.recorder.sessionClosed()
            expectEqual(harness.recorded.size, 0, "closed with no session open")
            harness.recorder.sessionFailed(RuntimeException("Unable to bind location button service."))
            expectEqual(harness.recorded.map { dataOf(it) }, listOf<Any?>(mapOf("state" to "failed", "cause" to "java.lang.RuntimeException")), "an error while opening")
            harness.recorder.sessionClosed()
            harness.recorder.sessionOpened()
            harness.recorder.sessionOpened()
            expectEqual(harness.recorder.isSessionOpen, true, "open")
            harness.recorder.sessionClosed()
            harness.recorder.sessionClosed()
            harness.recorder.sessionFailed(null)
            expectEqual(harness.recorded.map { dataOf(it)["state"] }, listOf<Any?>("failed", "opened", "closed", "failed"), "states")
            expectEqual(dataOf(harness.recorded.last()).keys, setOf("state"), "failed without an error has no cause")
        },
        TestCase("nothing is recorded where the button is not available (below API 37, or locationButton or fine not declared); the app's callbacks still run") {
            val cases = listOf(
                Harness(apiLevel = 36) to "API 36",
                Harness(declared = setOf(AndroidPermission.COARSE, AndroidPermission.FINE)) to "locationButton not declared",
                Harness(declared = setOf(AndroidPermission.COARSE, AndroidPermission.LOCATION_BUTTON)) to "fine not declared"
            )
            for ((harness, what) in cases) {
                expectEqual(harness.recorder.isRecording, false, "$what: isRecording")
                harness.client.onSessionOpened(FakeButtonSession("s"))
                harness.client.onPermissionResult(true)
                harness.client.onSessionError(IllegalStateException())
                harness.recorder.sessionClosed()
                expectEqual(harness.log, listOf("app opened s", "app result true", "app error IllegalStateException"), "$what: log")
            }
            val available = Harness(apiLevel = 38, declared = setOf(AndroidPermission.FINE, AndroidPermission.LOCATION_BUTTON))
            expectEqual(available.recorder.isRecording, true, "API 38 with fine and locationButton")
            available.client.onPermissionResult(true)
            expectEqual(available.recorded.size, 1, "recorded")
        },
        TestCase("an event that cannot be recorded goes to onRecordingError; the app's callback is called all the same") {
            val harness = Harness(failing = true)
            harness.client.onSessionOpened(FakeButtonSession("s"))
            harness.client.onPermissionResult(true)
            harness.client.onSessionError(SecurityException())
            expectEqual(harness.log, listOf("app opened s", "app result true", "app error SecurityException"), "log")
            expectEqual(harness.recordingErrors.map { it.javaClass.simpleName }, listOf("EventQueueFullException", "EventQueueFullException", "EventQueueFullException"), "errors")
        },
        TestCase("the recorder given a queue appends to it, in order, each event whole") {
            withTemporaryDirectory { directory ->
                EventQueue(directory).use { queue ->
                    val events = AndroidEvents("u-42", "d-7", queue.installId, clock = { NOW })
                    val recorder = LocationButtonRecorder(events, queue, 37)
                    val client = recorder.client(object : LocationButtonCallbacks<FakeButtonSession> {})
                    client.onSessionOpened(FakeButtonSession("s"))
                    client.onPermissionResult(true)
                    recorder.sessionClosed()
                    val queued = queue.peek(10)
                    expectEqual(queued.map { it.type }, listOf("locationButtonSession", "locationButtonResult", "locationButtonSession"), "types")
                    expectEqual(queued.map { dataOf(it) }, listOf<Any?>(mapOf("state" to "opened"), mapOf("granted" to true), mapOf("state" to "closed")), "data")
                    expect(queued.all { AndroidEvents.UUID_TEXT.matches(it.id) }) { "ids: ${queued.map { it.id }}" }
                }
            }
        },
        TestCase("PackageInfo → declaredPermissions with locationButton, and fineOnlyForLocationButton from FINE's REQUESTED_PERMISSION_ONLY_FOR_LOCATION_BUTTON") {
            expectEqual(ManifestPermissions.REQUESTED_PERMISSION_ONLY_FOR_LOCATION_BUTTON, 0x00020000, "the flag's value")
            expectEqual(ManifestPermissions.USE_LOCATION_BUTTON, BUTTON, "USE_LOCATION_BUTTON")
            expectEqual(AndroidPermission.fromManifestName(BUTTON), AndroidPermission.LOCATION_BUTTON, "by manifest name")
            val flagged = ManifestPermissions.fromPackageInfo(
                arrayOf(INTERNET, COARSE, FINE, BUTTON),
                intArrayOf(GRANTED_FLAG, GRANTED_FLAG, 0x00020000, 0))
            expectEqual(flagged, ManifestPermissions(setOf(AndroidPermission.COARSE, AndroidPermission.FINE, AndroidPermission.LOCATION_BUTTON), true), "fine only for the button")
            expectEqual(flagged.locationButtonAvailable(37), true, "available on 37")
            expectEqual(flagged.locationButtonAvailable(36), false, "not on 36")
            val withOtherBits = ManifestPermissions.fromPackageInfo(arrayOf(FINE), intArrayOf(0x00020000 or GRANTED_FLAG or NEVER_FOR_LOCATION_FLAG))
            expectEqual(withOtherBits.fineOnlyForLocationButton, true, "the bit among others")
            val plain = ManifestPermissions.fromPackageInfo(arrayOf(COARSE, FINE, BACKGROUND, SERVICE), intArrayOf(GRANTED_FLAG, GRANTED_FLAG or NEVER_FOR_LOCATION_FLAG, 0, GRANTED_FLAG))
            expectEqual(plain, ManifestPermissions(setOf(AndroidPermission.COARSE, AndroidPermission.FINE, AndroidPermission.BACKGROUND, AndroidPermission.FOREGROUND_SERVICE_LOCATION), false), "no flag")
            expectEqual(plain.locationButtonAvailable(37), false, "no button declared")
            expectEqual(ManifestPermissions.fromPackageInfo(arrayOf(COARSE, FINE), intArrayOf(0x00020000, 0)).fineOnlyForLocationButton, false, "the bit on COARSE does not count")
            expectEqual(ManifestPermissions.fromPackageInfo(null, null), ManifestPermissions(emptySet(), false), "no permissions at all")
            expectEqual(ManifestPermissions.fromPackageInfo(arrayOf(INTERNET), intArrayOf(0x00020000)), ManifestPermissions(emptySet(), false), "no location permission")
            expectEqual(ManifestPermissions.fromPackageInfo(arrayOf(COARSE, FINE), intArrayOf(0)), ManifestPermissions(setOf(AndroidPermission.COARSE, AndroidPermission.FINE), false), "flags shorter than names")
            expectEqual(ManifestPermissions.fromPackageInfo(arrayOf(FINE), null).fineOnlyForLocationButton, false, "no flags")
            expectThrows<IllegalArgumentException>("fine only without fine") { ManifestPermissions(setOf(AndroidPermission.COARSE), true) }
        },
        TestCase("contextReportedFrom: the context the package manager gives, declaredPermissions in SPEC order with locationButton, fineOnlyForLocationButton always sent") {
            val event = events().contextReportedFrom(37, 37, "2.0", arrayOf(BUTTON, FINE, INTERNET, COARSE), intArrayOf(0, GRANTED_FLAG or 0x00020000, GRANTED_FLAG, GRANTED_FLAG), osVersion = "17")
            expectEqual(event.json,
                "{\"id\":\"00000000-0000-4000-8000-000000000001\",\"userId\":\"u-42\",\"deviceId\":\"d-7\",\"occurredAt\":\"2026-11-22T10:00:00.123Z\"," +
                    "\"type\":\"contextReported\",\"data\":{\"platform\":\"android\",\"osVersion\":\"17\",\"appVersion\":\"2.0\",\"apiLevel\":37,\"targetSdk\":37," +
                    "\"declaredPermissions\":[\"coarse\",\"fine\",\"locationButton\"],\"fineOnlyForLocationButton\":true,\"installId\":\"$TEST_INSTALL_ID\"}}", "JSON")
            val plain = dataOf(events().contextReportedFrom(34, 34, null, arrayOf(COARSE, FINE, BACKGROUND, SERVICE), intArrayOf(0, 0, 0, 0)))
            expectEqual(plain["declaredPermissions"], listOf("coarse", "fine", "background", "foregroundServiceLocation"), "declared")
            expectEqual(plain["fineOnlyForLocationButton"], false, "false is sent: an update that drops the flag must say so")
            val nothing = dataOf(events().contextReportedFrom(30, 30, null, null, null))
            expectEqual(nothing["declaredPermissions"], listOf<String>(), "a manifest without permissions declares none")
            expectEqual(nothing["fineOnlyForLocationButton"], false, "nor fine only for the button")
            val all = dataOf(events().contextReported(37, 37, null, AndroidPermission.values().toSet()))
            expectEqual(all["declaredPermissions"], listOf("coarse", "fine", "background", "foregroundServiceLocation", "locationButton"), "all five in SPEC order")
            expect("fineOnlyForLocationButton" !in all) { "fineOnlyForLocationButton sent though not given: $all" }
        },
        TestCase("contextReported refuses fineOnlyForLocationButton true without fine declared (422 on the server); with declaredPermissions left out it is the server's to judge") {
            val events = events()
            expectThrows<IllegalArgumentException>("without fine") {
                events.contextReported(37, 37, null, setOf(AndroidPermission.COARSE, AndroidPermission.LOCATION_BUTTON), fineOnlyForLocationButton = true)
            }
            expectEqual(dataOf(events.contextReported(37, 37, null, null, fineOnlyForLocationButton = true))["fineOnlyForLocationButton"], true, "declared left out")
            expectEqual(dataOf(events.contextReported(37, 37, null, setOf(AndroidPermission.COARSE), fineOnlyForLocationButton = false))["fineOnlyForLocationButton"], false, "false without fine")
        },
        TestCase("locationButton is declared, never requested, granted or observed") {
            val events = events()
            expectEqual(AndroidPermission.LOCATION_BUTTON.isRuntime, false, "isRuntime")
            expectEqual(AndroidPermission.RUNTIME.map { it.specName }, listOf("coarse", "fine", "background"), "runtime")
            expectThrows<IllegalArgumentException>("requested") { events.permissionsRequested(setOf(AndroidPermission.FINE, AndroidPermission.LOCATION_BUTTON)) }
            expectThrows<IllegalArgumentException>("observed") { events.permissionsObserved(setOf(AndroidPermission.LOCATION_BUTTON)) }
            expectEqual(dataOf(events.permissionsObservedFrom(mapOf(FINE to 0, BUTTON to 0)))["granted"], listOf("fine"), "observed from checkSelfPermission")
            expectEqual(events.permissionsResultFrom(mapOf(BUTTON to true)) { false }, null, "a result naming only USE_LOCATION_BUTTON")
        }
    )
}
