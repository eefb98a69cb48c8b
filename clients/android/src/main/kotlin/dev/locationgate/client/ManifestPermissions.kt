package dev.locationgate.client

/**
 * What the app's merged manifest says about location, as `contextReported` reports it:
 * `declared`, the location permissions it requests (`declaredPermissions`, `locationButton` for
 * USE_LOCATION_BUTTON included), and `fineOnlyForLocationButton`, whether it marks
 * ACCESS_FINE_LOCATION `android:usesPermissionFlags="onlyForLocationButton"` (API 37: FINE
 * cannot be asked for with `requestPermissions`, only the location button grants it, for a
 * session).
 *
 * `fromPackageInfo` reads both from the package manager, so the app states nothing itself and
 * the context cannot drift from the manifest the device installed.
 */
data class ManifestPermissions(val declared: Set<AndroidPermission>, val fineOnlyForLocationButton: Boolean) {
    init {
        require(!fineOnlyForLocationButton || AndroidPermission.FINE in declared) {
            "fineOnlyForLocationButton is true but fine is not declared"
        }
    }

    /**
     * Whether Android 17's location button can be used on a device at `apiLevel` with this
     * manifest (SPEC §12): API 37 or later, with `locationButton` and `fine` declared. Elsewhere
     * the server refuses `locationButtonSession` and `locationButtonResult`.
     */
    fun locationButtonAvailable(apiLevel: Int): Boolean = isLocationButtonAvailable(apiLevel, declared)

    companion object {
        /**
         * `PackageInfo.REQUESTED_PERMISSION_ONLY_FOR_LOCATION_BUTTON` (API 37), a bit of
         * `requestedPermissionsFlags`: set on ACCESS_FINE_LOCATION when the manifest declares it
         * `usesPermissionFlags="onlyForLocationButton"`. Its value, 0x00020000, is the one
         * Android's API 37 reference and AOSP's `PackageInfo` give; platforms before API 37 never
         * set the bit (their manifest parser does not know the flag).
         */
        const val REQUESTED_PERMISSION_ONLY_FOR_LOCATION_BUTTON: Int = 0x00020000

        /** The manifest name of USE_LOCATION_BUTTON, which the location button needs. */
        const val USE_LOCATION_BUTTON: String = "android.permission.USE_LOCATION_BUTTON"

        /**
         * Reads the manifest from the app's own `PackageInfo`, fetched with `GET_PERMISSIONS`:
         * `requestedPermissions` and `requestedPermissionsFlags` as they are (both null when the
         * manifest requests no permission; `requestedPermissionsFlags[i]` belongs to
         * `requestedPermissions[i]`). Permissions other than the five location ones are left out.
         * `fineOnlyForLocationButton` is true when ACCESS_FINE_LOCATION's flags hold
         * `REQUESTED_PERMISSION_ONLY_FOR_LOCATION_BUTTON`; a flag Android did not give (no array,
         * or one shorter than the names) counts as not set.
         */
        @JvmStatic
        fun fromPackageInfo(requestedPermissions: Array<String>?, requestedPermissionsFlags: IntArray?): ManifestPermissions {
            val declared = HashSet<AndroidPermission>()
            var fineOnly = false
            val names = requestedPermissions ?: return ManifestPermissions(emptySet(), false)
            for (index in names.indices) {
                val permission = AndroidPermission.fromManifestName(names[index]) ?: continue
                declared.add(permission)
                if (permission == AndroidPermission.FINE && requestedPermissionsFlags != null && index < requestedPermissionsFlags.size &&
                    (requestedPermissionsFlags[index] and REQUESTED_PERMISSION_ONLY_FOR_LOCATION_BUTTON) != 0) {
                    fineOnly = true
                }
            }
            return ManifestPermissions(declared, fineOnly)
        }

        /** SPEC §12's "available": API 37 or later, with `locationButton` and `fine` among `declared`. */
        @JvmStatic
        fun isLocationButtonAvailable(apiLevel: Int, declared: Set<AndroidPermission>): Boolean =
            apiLevel >= AndroidEvents.LOCATION_BUTTON_API_LEVEL &&
                AndroidPermission.LOCATION_BUTTON in declared && AndroidPermission.FINE in declared
    }
}
