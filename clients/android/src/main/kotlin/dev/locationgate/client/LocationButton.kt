package dev.locationgate.client

/**
 * The callbacks of Android 17's `android.app.permissionui.LocationButtonClient`, under the same
 * names, with the session's type left open so that this library builds without the Android SDK:
 * in an app `S` is `android.app.permissionui.LocationButtonSession`. Every callback does nothing
 * unless overridden.
 */
interface LocationButtonCallbacks<S> {
    /** `LocationButtonClient.onSessionOpened(session)`: the button is on screen. */
    fun onSessionOpened(session: S) {}

    /** `LocationButtonClient.onSessionError(cause)`: no session, or no longer one (Android closed it). */
    fun onSessionError(cause: Throwable) {}

    /** `LocationButtonClient.onPermissionResult(isGranted)`: a tap's outcome. */
    fun onPermissionResult(isGranted: Boolean) {}
}

/**
 * Records what Android 17's location button tells an app, as SPEC §12's events, so that the
 * server learns of the button's sessions and grants without the app building a single event:
 *
 * - `locationButtonSession` `opened` at `onSessionOpened` (`sessionOpened`), `closed` when the
 *   app closes the session (`sessionClosed`), `failed` at `onSessionError` (`sessionFailed`),
 *   with the error's class name as `cause` (`AndroidEvents.locationButtonCause`);
 * - `locationButtonResult` with `granted` at `onPermissionResult(isGranted)` (`permissionResult`).
 *
 * `client(app)` wraps the app's own callbacks: each call is recorded first, then handed to the
 * app's callback, in the order Android made them. An event that cannot be recorded (the queue
 * full, a disk error) goes to `onRecordingError`, never to the caller: the app's callback is
 * called all the same, and the next `permissionsObserved` puts the server right.
 *
 * Nothing is recorded where the server would refuse it: below API 37 (the Jetpack
 * `LocationButton` falls back to the ordinary permission dialog there, which the app reports as
 * `permissionsRequested` / `permissionsResult`), or when `declaredPermissions` is given and
 * lacks `locationButton` or `fine` (SPEC §12: the button is not available). `closed` is
 * recorded only for a session this recorder saw open, and `opened` only while none is: the
 * server holds one button session per device. Use one recorder per button.
 *
 * Safe to call from any thread; `LocationButtonClient` calls come serially on the app's executor.
 * Each recorded event costs one `EventQueue.append` (an fsync) on the calling thread: pass a
 * `record` that hands events to a single background executor where that matters.
 *
 * @param apiLevel `Build.VERSION.SDK_INT`.
 * @param declaredPermissions the manifest's, as the context reports them
 *   (`ManifestPermissions.fromPackageInfo(...).declared`), or null to record on every API 37+ device.
 * @param onRecordingError told of each event that could not be recorded.
 */
class LocationButtonRecorder @JvmOverloads constructor(
    private val events: AndroidEvents,
    private val record: (Event) -> Unit,
    val apiLevel: Int,
    declaredPermissions: Set<AndroidPermission>? = null,
    private val onRecordingError: ((Exception) -> Unit)? = null
) {
    /** Records into `queue` (`EventQueue.append`). */
    @JvmOverloads
    constructor(
        events: AndroidEvents,
        queue: EventQueue,
        apiLevel: Int,
        declaredPermissions: Set<AndroidPermission>? = null,
        onRecordingError: ((Exception) -> Unit)? = null
    ) : this(events, { event: Event -> queue.append(event) }, apiLevel, declaredPermissions, onRecordingError)

    /** Whether this recorder records anything: the button is available on this device (SPEC §12). */
    val isRecording: Boolean = if (declaredPermissions == null) {
        apiLevel >= AndroidEvents.LOCATION_BUTTON_API_LEVEL
    } else {
        ManifestPermissions.isLocationButtonAvailable(apiLevel, declaredPermissions)
    }

    private val lock = Any()
    private var open = false

    /** Whether a session is open, as far as this recorder was told. */
    val isSessionOpen: Boolean get() = synchronized(lock) { open }

    /** The session opened (`onSessionOpened`; Jetpack: the `LocationButton` was attached to its window): `opened`. */
    fun sessionOpened() {
        synchronized(lock) {
            if (isRecording && !open) {
                open = true
                save { events.locationButtonSession(LocationButtonSessionState.OPENED) }
            }
        }
    }

    /** The app closed the session (call it where the app calls `close()`; Jetpack: the view was detached): `closed`, if one was open. */
    fun sessionClosed() {
        synchronized(lock) {
            if (isRecording && open) {
                open = false
                save { events.locationButtonSession(LocationButtonSessionState.CLOSED) }
            }
        }
    }

    /**
     * `onSessionError(cause)` (Jetpack: `OnErrorListener.onError`): `failed`, with `cause` the
     * class name of `error` (none for null). Recorded whether or not a session was open: an error
     * while making one is the usual case. The session is over either way.
     */
    fun sessionFailed(error: Throwable?) {
        synchronized(lock) {
            if (isRecording) {
                open = false
                save { events.locationButtonSessionFailed(error) }
            }
        }
    }

    /** `onPermissionResult(isGranted)` (Jetpack: `OnPermissionResultListener`): `locationButtonResult`. */
    fun permissionResult(granted: Boolean) {
        synchronized(lock) {
            if (isRecording) save { events.locationButtonResult(granted) }
        }
    }

    /**
     * `app`'s callbacks with this recorder in front: each call is recorded (as `sessionOpened`,
     * `sessionFailed`, `permissionResult` do), then passed to `app`. Hand it to the app's
     * `LocationButtonClient` (`LocationButtonProvider.openSession(..., client)`).
     */
    fun <S> client(app: LocationButtonCallbacks<S>): LocationButtonCallbacks<S> = RecordingCallbacks(this, app)

    private fun save(build: () -> Event) {
        try {
            record(build())
        } catch (error: Exception) {
            onRecordingError?.invoke(error)
        }
    }

    private class RecordingCallbacks<S>(
        private val recorder: LocationButtonRecorder,
        private val app: LocationButtonCallbacks<S>
    ) : LocationButtonCallbacks<S> {
        override fun onSessionOpened(session: S) {
            recorder.sessionOpened()
            app.onSessionOpened(session)
        }

        override fun onSessionError(cause: Throwable) {
            recorder.sessionFailed(cause)
            app.onSessionError(cause)
        }

        override fun onPermissionResult(isGranted: Boolean) {
            recorder.permissionResult(isGranted)
            app.onPermissionResult(isGranted)
        }
    }
}
