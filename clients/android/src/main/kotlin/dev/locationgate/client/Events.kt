package dev.locationgate.client

import java.util.UUID

/**
 * One event as SPEC §1 has a client send it, already written as JSON: the bytes that are queued
 * and, byte for byte, sent (a retry sends exactly what the first attempt sent).
 *
 * `id` is the event's UUID, given when it was recorded and kept through every retry: it is the
 * idempotency key that makes the server answer `duplicate: true` instead of storing it twice.
 */
data class Event(val id: String, val type: String, val json: String) {
    override fun toString(): String = json
}

/** An Android location permission, by its SPEC §12 name and its manifest name. */
enum class AndroidPermission(val specName: String, val manifestName: String) {
    /** ACCESS_COARSE_LOCATION: approximate location. */
    COARSE("coarse", "android.permission.ACCESS_COARSE_LOCATION"),
    /** ACCESS_FINE_LOCATION: precise location. */
    FINE("fine", "android.permission.ACCESS_FINE_LOCATION"),
    /** ACCESS_BACKGROUND_LOCATION (API 29+). */
    BACKGROUND("background", "android.permission.ACCESS_BACKGROUND_LOCATION"),
    /** FOREGROUND_SERVICE_LOCATION (API 34+): declared in the manifest, never requested. */
    FOREGROUND_SERVICE_LOCATION("foregroundServiceLocation", "android.permission.FOREGROUND_SERVICE_LOCATION"),
    /**
     * USE_LOCATION_BUTTON (API 37+): declared in the manifest, never requested; Android 17's
     * location button needs it. Not among the four a context without `declaredPermissions`
     * stands for: the server counts it declared only when a context names it.
     */
    LOCATION_BUTTON("locationButton", "android.permission.USE_LOCATION_BUTTON");

    /** Whether an app requests it at run time (the three location permissions). */
    val isRuntime: Boolean get() = this == COARSE || this == FINE || this == BACKGROUND

    companion object {
        /** The three runtime location permissions, the ones to ask `checkSelfPermission` about. */
        @JvmField
        val RUNTIME: List<AndroidPermission> = listOf(COARSE, FINE, BACKGROUND)

        /** The permission a manifest name (`android.permission.ACCESS_FINE_LOCATION`) names, or null. */
        @JvmStatic
        fun fromManifestName(name: String): AndroidPermission? = values().firstOrNull { it.manifestName == name }
    }
}

/** The app's use state (`appStateChanged.state`). */
enum class AppState(val specName: String) {
    FOREGROUND("foreground"),
    BACKGROUND("background"),
    TERMINATED("terminated")
}

/** What `LocationButtonClient` told the app about the location button's session (`locationButtonSession.state`). */
enum class LocationButtonSessionState(val specName: String) {
    /** `onSessionOpened`: the button is on screen. */
    OPENED("opened"),
    /** The app called the session's `close()` (Jetpack `LocationButton`: the view left its window). */
    CLOSED("closed"),
    /** `onSessionError(Throwable)`: the session could not be made, or was lost (Android closed it first). */
    FAILED("failed")
}

/** What the person chose on the app's location page in Settings (`settingsChanged.authorization`). */
enum class SettingsAuthorization(val specName: String) {
    ALWAYS("always"),
    WHILE_USING("whileUsing"),
    ASK_EVERY_TIME("askEveryTime"),
    NEVER("never")
}

/**
 * Builds the Android events of SPEC §12 for one device of one user, each with a fresh UUID and
 * the time it was recorded. Queue each at once (`EventQueue.append`): the id is given now, not
 * when the event is sent, so that every retry carries the same idempotency key.
 *
 * `installId` is the app's own id of this installation (SPEC I1): pass the queue's,
 * `EventQueue.installId`, which the queue made at the app's first launch and keeps in its
 * directory. Every `contextReported` carries it. Uninstalling the app deletes that directory
 * while ANDROID_ID (or whatever `deviceId` is) may stay, so a reinstall reports a new install
 * id and the server resets the permission state, as Android did.
 *
 * Values no server would accept (an id outside `[A-Za-z0-9._:@-]{1,128}`, an `appVersion` over
 * 64 bytes or with control characters, an API level outside 1..99, an empty request...) throw
 * `IllegalArgumentException` here, at the call that made them, rather than being refused by the
 * server later.
 *
 * @param installId the queue's `EventQueue.installId`; 1 to 64 bytes with no control characters.
 * @param clock the time of each event, in milliseconds since the epoch; tests pass a fixed one.
 * @param newId each event's id; tests may pass a counter, apps keep the random UUID.
 */
class AndroidEvents @JvmOverloads constructor(
    val userId: String,
    val deviceId: String,
    val installId: String,
    private val clock: () -> Long = { System.currentTimeMillis() },
    private val newId: () -> String = { UUID.randomUUID().toString() }
) {
    init {
        requireIdentifier("userId", userId)
        requireIdentifier("deviceId", deviceId)
        requireClientText("installId", installId, InstallIdFile.MAX_BYTES)
    }

    /**
     * The app launched or was updated (C1 on Android): report it at every launch, before any
     * request. `apiLevel` is `Build.VERSION.SDK_INT`, `targetSdk` the app's
     * `applicationInfo.targetSdkVersion`, `declaredPermissions` the location permissions of the
     * manifest (null: the server assumes `coarse`, `fine`, `background` and
     * `foregroundServiceLocation`, never `locationButton`). `osVersion` is optional; pass
     * `osVersionOrNull(Build.VERSION.RELEASE)`, which drops a release name that is not numeric.
     * `fineOnlyForLocationButton`: the manifest marks ACCESS_FINE_LOCATION
     * `onlyForLocationButton` (null leaves it out; the server keeps what it had, false at
     * first). `contextReportedFrom` reads both from the package manager's `PackageInfo`.
     * `installId` is added from the constructor (SPEC I1): the app does not pass it here.
     *
     * @throws IllegalArgumentException for `fineOnlyForLocationButton` true with
     *   `declaredPermissions` that lack `fine`, which the server refuses.
     */
    @JvmOverloads
    fun contextReported(
        apiLevel: Int,
        targetSdk: Int,
        appVersion: String?,
        declaredPermissions: Set<AndroidPermission>?,
        osVersion: String? = null,
        fineOnlyForLocationButton: Boolean? = null
    ): Event {
        require(apiLevel in 1..99) { "apiLevel $apiLevel is not from 1 to 99" }
        require(targetSdk in 1..99) { "targetSdk $targetSdk is not from 1 to 99" }
        require(fineOnlyForLocationButton != true || declaredPermissions == null || AndroidPermission.FINE in declaredPermissions) {
            "fineOnlyForLocationButton is true but fine is not among declaredPermissions"
        }
        val data = JsonObjectWriter().string("platform", "android")
        if (osVersion != null) {
            require(OS_VERSION.matches(osVersion)) { "osVersion must be up to three dot-separated numbers of 1 to 4 digits" }
            data.string("osVersion", osVersion)
        }
        if (appVersion != null) {
            requireClientText("appVersion", appVersion, 64)
            data.string("appVersion", appVersion)
        }
        data.number("apiLevel", apiLevel.toLong()).number("targetSdk", targetSdk.toLong())
        if (declaredPermissions != null) data.strings("declaredPermissions", names(declaredPermissions))
        if (fineOnlyForLocationButton != null) data.bool("fineOnlyForLocationButton", fineOnlyForLocationButton)
        data.string("installId", installId)
        return event("contextReported", data)
    }

    /**
     * `contextReported` with the manifest read from the package manager: pass the app's own
     * `PackageInfo` (`getPackageInfo(packageName, GET_PERMISSIONS)`) fields `requestedPermissions`
     * and `requestedPermissionsFlags` as they are (null when the manifest requests nothing).
     * `declaredPermissions` is every location permission among them, `locationButton` for
     * USE_LOCATION_BUTTON included, and `fineOnlyForLocationButton` is always sent, true when
     * ACCESS_FINE_LOCATION's flags hold `REQUESTED_PERMISSION_ONLY_FOR_LOCATION_BUTTON`
     * (`ManifestPermissions.fromPackageInfo`). The app adds nothing of its own.
     */
    @JvmOverloads
    fun contextReportedFrom(
        apiLevel: Int,
        targetSdk: Int,
        appVersion: String?,
        requestedPermissions: Array<String>?,
        requestedPermissionsFlags: IntArray?,
        osVersion: String? = null
    ): Event = contextReported(apiLevel, targetSdk, appVersion, ManifestPermissions.fromPackageInfo(requestedPermissions, requestedPermissionsFlags), osVersion)

    /** `contextReported` with the manifest's facts as `ManifestPermissions.fromPackageInfo` read them. */
    @JvmOverloads
    fun contextReported(
        apiLevel: Int,
        targetSdk: Int,
        appVersion: String?,
        manifest: ManifestPermissions,
        osVersion: String? = null
    ): Event = contextReported(apiLevel, targetSdk, appVersion, manifest.declared, osVersion, manifest.fineOnlyForLocationButton)

    /** The app is about to call `requestPermissions` (or launch `RequestMultiplePermissions`) for these. */
    fun permissionsRequested(permissions: Set<AndroidPermission>): Event {
        require(permissions.isNotEmpty()) { "name at least one of coarse, fine, background" }
        requireRuntime("permissions", permissions)
        return event("permissionsRequested", JsonObjectWriter().strings("permissions", names(permissions)))
    }

    /**
     * `onRequestPermissionsResult` in SPEC names. `rationale` is the set for which
     * `shouldShowRequestPermissionRationale` is true right after the result, among the permissions
     * asked for; it is always sent, because only a denial changes that answer: it is how the
     * server tells a dialog closed without an answer from a denial, and, below API 30, a denial
     * with "don't ask again" from one without (D5, D11). The `permissionsResultFrom` functions
     * work it out from the activity.
     */
    @JvmOverloads
    fun permissionsResult(
        granted: Set<AndroidPermission>,
        denied: Set<AndroidPermission>,
        rationale: Set<AndroidPermission>,
        interrupted: Boolean = false
    ): Event {
        requireRuntime("granted", granted)
        requireRuntime("denied", denied)
        val both = granted.intersect(denied)
        require(both.isEmpty()) { "${names(both).joinToString()} is both granted and denied" }
        requireRuntime("rationale", rationale)
        val data = JsonObjectWriter()
            .strings("granted", names(granted))
            .strings("denied", names(denied))
            .strings("rationale", names(rationale))
            .bool("interrupted", interrupted)
        return event("permissionsResult", data)
    }

    /**
     * The result of `ActivityResultContracts.RequestMultiplePermissions`: manifest names to
     * granted. Location permissions granted go to `granted`, refused ones to `denied`; other
     * permissions are left out.
     *
     * `shouldShowRationale` is the activity's `shouldShowRequestPermissionRationale` (for example
     * `{ ActivityCompat.shouldShowRequestPermissionRationale(activity, it) }`); it is asked here,
     * about each location permission of the result (the ones requested), and those it answers
     * true for are `rationale`. Call this inside the result callback, so that the answers are the
     * ones right after the result, before anything else can change them.
     *
     * An empty map is what Android hands over when the request was interrupted (the activity
     * destroyed while the dialog showed, say): `interrupted: true` with empty sets, `rationale`
     * included, without asking anything. Null when the map is not empty but names no location
     * permission: there is nothing to report.
     */
    fun permissionsResultFrom(result: Map<String, Boolean>, shouldShowRationale: (String) -> Boolean): Event? {
        if (result.isEmpty()) {
            return permissionsResult(emptySet(), emptySet(), emptySet(), interrupted = true)
        }
        val granted = HashSet<AndroidPermission>()
        val denied = HashSet<AndroidPermission>()
        val rationale = HashSet<AndroidPermission>()
        for ((name, isGranted) in result) {
            val permission = AndroidPermission.fromManifestName(name) ?: continue
            if (!permission.isRuntime) continue
            if (isGranted) granted.add(permission) else denied.add(permission)
            if (shouldShowRationale(name)) rationale.add(permission)
        }
        if (granted.isEmpty() && denied.isEmpty()) return null
        return permissionsResult(granted, denied, rationale, interrupted = false)
    }

    /**
     * The same from `Activity.onRequestPermissionsResult(requestCode, permissions, grantResults)`
     * (after `ActivityCompat.requestPermissions`): `grantResults[i]` is `PERMISSION_GRANTED` (0)
     * when `permissions[i]` was granted. Empty arrays are an interrupted request.
     */
    fun permissionsResultFrom(permissions: Array<String>, grantResults: IntArray, shouldShowRationale: (String) -> Boolean): Event? {
        require(permissions.size == grantResults.size) { "${permissions.size} permissions but ${grantResults.size} grant results" }
        val result = LinkedHashMap<String, Boolean>()
        for (index in permissions.indices) result[permissions[index]] = grantResults[index] == PERMISSION_GRANTED
        return permissionsResultFrom(result, shouldShowRationale)
    }

    /**
     * What `checkSelfPermission` says is granted now (D9: the device is the truth), and
     * optionally `LocationManagerCompat.isLocationEnabled`.
     */
    @JvmOverloads
    fun permissionsObserved(granted: Set<AndroidPermission>, locationEnabled: Boolean? = null): Event {
        requireRuntime("granted", granted)
        val data = JsonObjectWriter().strings("granted", names(granted))
        if (locationEnabled != null) data.bool("locationEnabled", locationEnabled)
        return event("permissionsObserved", data)
    }

    /**
     * `permissionsObserved` from `checkSelfPermission` results by manifest name:
     * `PERMISSION_GRANTED` (0) is granted, anything else (`PERMISSION_DENIED`, -1) is not, and a
     * location permission missing from the map counts as not granted. Other permissions are
     * ignored. Report what Android says, also for ACCESS_BACKGROUND_LOCATION below API 29 (the
     * server knows it does not exist there).
     */
    @JvmOverloads
    fun permissionsObservedFrom(selfPermissions: Map<String, Int>, locationEnabled: Boolean? = null): Event {
        val granted = selfPermissions
            .filter { it.value == PERMISSION_GRANTED }
            .keys.mapNotNull { AndroidPermission.fromManifestName(it) }
            .filter { it.isRuntime }
            .toSet()
        return permissionsObserved(granted, locationEnabled)
    }

    /**
     * `permissionsObserved` asking `checkSelfPermission` (e.g. `ContextCompat.checkSelfPermission(context, it)`)
     * about the three runtime location permissions.
     */
    fun permissionsObservedFrom(locationEnabled: Boolean?, checkSelfPermission: (String) -> Int): Event =
        permissionsObservedFrom(AndroidPermission.RUNTIME.associate { it.manifestName to checkSelfPermission(it.manifestName) }, locationEnabled)

    /**
     * The app's use state: foreground or background (`ProcessLifecycleOwner`), or terminating.
     * `foregroundService`: a foreground service of type location is running (D10).
     */
    @JvmOverloads
    fun appStateChanged(state: AppState, foregroundService: Boolean = false): Event =
        event("appStateChanged", JsonObjectWriter().string("state", state.specName).bool("foregroundService", foregroundService))

    /** The app's location page in Settings changed (D7); at least one of the two. */
    fun settingsChanged(authorization: SettingsAuthorization?, preciseLocation: Boolean?): Event {
        require(authorization != null || preciseLocation != null) { "settingsChanged needs authorization, preciseLocation or both (T1)" }
        val data = JsonObjectWriter()
        if (authorization != null) data.string("authorization", authorization.specName)
        if (preciseLocation != null) data.bool("preciseLocation", preciseLocation)
        return event("settingsChanged", data)
    }

    /** The system location switch. */
    fun locationServicesChanged(enabled: Boolean): Event =
        event("locationServicesChanged", JsonObjectWriter().bool("enabled", enabled))

    /** The system reset the app's permissions after months unused (D8). */
    fun permissionsReset(): Event = event("permissionsReset", JsonObjectWriter().string("reason", "unusedApp"))

    /**
     * Android 17's location button session (B1): `opened` (`LocationButtonClient.onSessionOpened`),
     * `closed` (the app's `close()`), `failed` (`onSessionError`). `cause` goes with `failed`
     * only: 1 to 128 bytes of `[A-Za-z0-9._$-]`, the error's class name
     * (`locationButtonCause(error)` makes one of any `Throwable`). `LocationButtonRecorder`
     * records these from the callbacks themselves.
     */
    @JvmOverloads
    fun locationButtonSession(state: LocationButtonSessionState, cause: String? = null): Event {
        val data = JsonObjectWriter().string("state", state.specName)
        if (cause != null) {
            require(state == LocationButtonSessionState.FAILED) { "cause goes with state failed only, not ${state.specName}" }
            require(CAUSE.matches(cause)) { "cause must be 1 to 128 characters of A-Z a-z 0-9 . _ \$ -" }
            data.string("cause", cause)
        }
        return event("locationButtonSession", data)
    }

    /** `locationButtonSession` `failed`, with the class name of `error` (if any) as the `cause`. */
    fun locationButtonSessionFailed(error: Throwable?): Event =
        locationButtonSession(LocationButtonSessionState.FAILED, error?.let { locationButtonCause(it) })

    /** `LocationButtonClient.onPermissionResult(isGranted)` on API 37+ (B2-B5). */
    fun locationButtonResult(granted: Boolean): Event =
        event("locationButtonResult", JsonObjectWriter().bool("granted", granted))

    /**
     * Any other event type, with `data` as a complete JSON object (or null for none). For what
     * this class has no builder for, and for tests.
     */
    fun custom(type: String, data: String?): Event {
        requireClientText("type", type, 64)
        return event(type, data)
    }

    private fun event(type: String, data: JsonObjectWriter): Event = event(type, data.build())

    private fun event(type: String, data: String?): Event {
        val id = asciiLowercase(newId())
        require(UUID_TEXT.matches(id)) { "id $id is not a UUID" }
        val writer = JsonObjectWriter()
            .string("id", id)
            .string("userId", userId)
            .string("deviceId", deviceId)
            .string("occurredAt", Rfc3339.format(clock()))
            .string("type", type)
        if (data != null) writer.json("data", data)
        return Event(id, type, writer.build())
    }

    companion object {
        /** `PackageManager.PERMISSION_GRANTED`. */
        const val PERMISSION_GRANTED = 0

        /** The first API level with the location button (Android 17). */
        const val LOCATION_BUTTON_API_LEVEL = 37

        /** The most bytes of a `locationButtonSession.cause`. */
        const val MAX_CAUSE_BYTES = 128

        private val IDENTIFIER = Regex("[A-Za-z0-9._:@-]{1,128}")
        private val CAUSE = Regex("[A-Za-z0-9._\$-]{1,$MAX_CAUSE_BYTES}")
        private val OS_VERSION = Regex("[0-9]{1,4}(\\.[0-9]{1,4}){0,2}")
        internal val UUID_TEXT = Regex("[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")

        /**
         * The `cause` of a `locationButtonSession` `failed` for `error`: its class's name
         * (`Class.getName()`, `java.lang.SecurityException`), in the server's bounds. Each
         * character outside `[A-Za-z0-9._$-]` becomes `_` (a surrogate pair, one character: one
         * `_`), so a lambda's or a hidden class's name (`Foo$$Lambda/0x...`) or a non-ASCII
         * identifier still gives a name. A name over 128 characters keeps its end, the class's
         * own name, from the start of a package segment where one begins within the last 128.
         */
        @JvmStatic
        fun locationButtonCause(error: Throwable): String = causeFromClassName(error.javaClass.name)

        /** `locationButtonCause` for a class's name as `Class.getName()` gives it. */
        internal fun causeFromClassName(name: String): String {
            val safe = StringBuilder(name.length)
            var index = 0
            while (index < name.length) {
                val c = name[index]
                val allowed = (c in 'A'..'Z') || (c in 'a'..'z') || (c in '0'..'9') || c == '.' || c == '_' || c == '$' || c == '-'
                safe.append(if (allowed) c else '_')
                if (Character.isHighSurrogate(c) && index + 1 < name.length && Character.isLowSurrogate(name[index + 1])) index += 1
                index += 1
            }
            if (safe.length == 0) return "_"
            if (safe.length <= MAX_CAUSE_BYTES) return safe.toString()
            val start = safe.length - MAX_CAUSE_BYTES
            val tail = safe.substring(start)
            if (safe[start - 1] == '.') return tail
            val dot = tail.indexOf('.')
            return if (dot >= 0 && dot + 1 < tail.length) tail.substring(dot + 1) else tail
        }

        /** `release` (`Build.VERSION.RELEASE`, "14" or "8.1.0") when the server takes it as `osVersion`, else null. */
        @JvmStatic
        fun osVersionOrNull(release: String?): String? = release?.takeIf { OS_VERSION.matches(it) }

        private fun requireIdentifier(field: String, value: String) {
            require(IDENTIFIER.matches(value)) { "$field must be 1 to 128 characters of A-Z a-z 0-9 . _ : @ -" }
        }

        /** SPEC §1 strings: valid UTF-8, no control characters, bounded in bytes. */
        internal fun requireClientText(field: String, value: String, maxBytes: Int) {
            for (c in value) require(c >= ' ' && c != '\u007F') { "$field holds a control character" }
            val bytes = utf8Length(field, value)
            require(bytes in 1..maxBytes) { "$field must be 1 to $maxBytes bytes of UTF-8" }
        }

        private fun utf8Length(field: String, value: String): Int {
            var bytes = 0
            var index = 0
            while (index < value.length) {
                val c = value[index]
                bytes += when {
                    c < '\u0080' -> 1
                    c < '\u0800' -> 2
                    Character.isHighSurrogate(c) && index + 1 < value.length && Character.isLowSurrogate(value[index + 1]) -> {
                        index += 1
                        4
                    }
                    Character.isSurrogate(c) -> throw IllegalArgumentException("$field holds a lone UTF-16 surrogate, which is not UTF-8")
                    else -> 3
                }
                index += 1
            }
            return bytes
        }

        private fun requireRuntime(field: String, permissions: Set<AndroidPermission>) {
            val declaredOnly = permissions.filter { !it.isRuntime }
            require(declaredOnly.isEmpty()) { "$field: ${declaredOnly.joinToString { it.specName }} is declared, never requested or granted at run time" }
        }

        /** SPEC names in SPEC order, so that the same set always writes the same bytes. */
        private fun names(permissions: Set<AndroidPermission>): List<String> = permissions.sorted().map { it.specName }
    }
}

/** RFC 3339 UTC times with milliseconds, `2026-11-22T10:00:00.000Z`, without java.time (API 26+ on Android). */
object Rfc3339 {
    /** Year 10000 begins here; SPEC §1 accepts times from the epoch up to it. */
    const val END_MILLIS = 253_402_300_800_000L

    /** The time `epochMillis` names, in UTC; outside 1970..9999 is an `IllegalArgumentException` (the server refuses it). */
    @JvmStatic
    fun format(epochMillis: Long): String {
        require(epochMillis in 0 until END_MILLIS) { "occurredAt must be from 1970-01-01T00:00:00Z up to but not including the year 10000" }
        val days = Math.floorDiv(epochMillis, 86_400_000L)
        val ofDay = Math.floorMod(epochMillis, 86_400_000L)
        // Howard Hinnant's civil_from_days.
        val z = days + 719_468
        val era = Math.floorDiv(z, 146_097L)
        val dayOfEra = z - era * 146_097
        val yearOfEra = (dayOfEra - dayOfEra / 1_460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        val dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        val shiftedMonth = (5 * dayOfYear + 2) / 153
        val day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
        val month = if (shiftedMonth < 10) shiftedMonth + 3 else shiftedMonth - 9
        val year = yearOfEra + era * 400 + (if (month <= 2) 1 else 0)
        val out = StringBuilder(24)
        pad(out, year, 4).append('-')
        pad(out, month, 2).append('-')
        pad(out, day, 2).append('T')
        pad(out, ofDay / 3_600_000, 2).append(':')
        pad(out, ofDay / 60_000 % 60, 2).append(':')
        pad(out, ofDay / 1_000 % 60, 2).append('.')
        pad(out, ofDay % 1_000, 3).append('Z')
        return out.toString()
    }

    private fun pad(out: StringBuilder, value: Long, width: Int): StringBuilder {
        val digits = value.toString()
        for (i in digits.length until width) out.append('0')
        return out.append(digits)
    }
}
