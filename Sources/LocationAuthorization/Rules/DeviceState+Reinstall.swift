/// I1 (SPEC §12, both platforms): deleting an app resets its location permission on iOS and on
/// Android, but an app's own device id can outlive a reinstall (Android's ANDROID_ID does). The
/// app's own id for an installation (`installId` on `contextReported`, made at first launch and
/// kept in the app's storage) tells a reinstall apart from a relaunch.
extension DeviceState {
    /// Whether `report` names an installation other than the one this stream had. The first
    /// `installId` of a stream, or the same one again, is no reinstall.
    func isReinstall(_ report: DeviceContext) -> Bool {
        guard let reported = report.installID, let known = installID else { return false }
        return reported != known
    }

    /// Records the report's `installId` and, when it names a new installation, returns the app's
    /// permission state to a new install's: Core Location's notDetermined with C1's starting
    /// accuracy, no prompt pending or used, no sessions or background activity (the relaunch
    /// window closed); Android's no grant, denial or block (D1's install grants come back with
    /// the context), no location button consent or session (B1, B7). Context, Location Services,
    /// restriction and app state are the device's and stay. The effects: `reset(reinstalled)`,
    /// then `sessionChanged` for each session removed (the location button's last); the rule set
    /// adds `statusChanged` / `accuracyChanged`.
    mutating func applyInstallation(of report: DeviceContext) -> [Effect] {
        guard let reported = report.installID else { return [] }
        defer { installID = reported }
        guard isReinstall(report) else { return [] }
        var removed = sessionState.sessions.keys.sorted()
        if android.locationButtonSession { removed.append(LocationButton.sessionKey) }
        authorization = .notDetermined
        provisional = false
        temporary = false
        alwaysPromptUsed = false
        pendingPrompt = nil
        // C1: the starting accuracy, from the build's NSLocationDefaultAccuracyReduced.
        accuracy = (report.defaultAccuracyReduced ?? context.defaultAccuracyReduced) == true ? .reduced : .full
        temporaryFullAccuracy = false
        inferredAllowWhileUsing = false
        sessionState = ServiceSessionState()
        android = AndroidPermissionState()
        return [.reset(.reinstalled)] + removed.map { .sessionChanged(session: $0, active: false) }
    }
}
