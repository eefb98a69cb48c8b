/// What an experiment assigns and counts (SPEC §16 "Assignment"): an installation of the app
/// where the device's context gave one (I1), else the stream.
///
/// An installation, because a person can be asked only once or twice per install: a reinstall
/// resets the permission (I1), so a reinstalled device is a new unit, exposed anew and counted
/// once per install. The stream, because an app that reports no `installId` still needs a
/// stable unit, and `userId/deviceId` is the only one it has.
public enum ExperimentUnit: Sendable, Hashable, CustomStringConvertible {
    /// `install:` and the `installId` (I1), as the context reported it.
    case install(String)
    /// `device:` and `userId/deviceId`. Neither id can hold a `/` (SPEC §1), so the text is
    /// unambiguous.
    case device(userID: String, deviceID: String)

    /// The unit a device would be exposed as now: its latest `installId` where a context gave
    /// one, else its stream.
    ///
    /// Not always the unit it *is*: the unit is fixed at the exposure, so a device exposed as
    /// `device:…` stays that unit when it reports its first `installId` later (SPEC §16).
    /// `candidates` lists the units whose exposure a device may hold; the evaluation takes
    /// the first one with an exposure that no reinstall replaced.
    public init(state: DeviceState, userID: String, deviceID: String) {
        if let installID = state.installID {
            self = .install(installID)
        } else {
            self = .device(userID: userID, deviceID: deviceID)
        }
    }

    /// The units an exposure of this device may be filed under, in the order a lookup should
    /// prefer them: the stream's own unit first (an exposure made before the first `installId`
    /// was reported stays the device's unit), then the installation's (an exposure another
    /// stream of the same installation made, or this one made after its `installId`).
    ///
    /// An exposure is the device's current one only while no reinstall replaced it: when I1's
    /// `reset(reinstalled)` happens on a stream, the exposures of its units so far are marked
    /// replaced (`experiment_exposures.replaced_position`), and the next evaluation exposes the
    /// new installation's unit.
    public static func candidates(state: DeviceState, userID: String, deviceID: String) -> [ExperimentUnit] {
        var units: [ExperimentUnit] = [.device(userID: userID, deviceID: deviceID)]
        if let installID = state.installID { units.append(.install(installID)) }
        return units
    }

    /// The unit's text, as stored and as hashed: `install:ID` or `device:USER/DEVICE`.
    public var text: String {
        switch self {
        case .install(let installID): "install:" + installID
        case .device(let userID, let deviceID): "device:" + userID + "/" + deviceID
        }
    }

    public var description: String { text }

    /// Reads a stored unit's text back; nil for text `text` never writes.
    public init?(text: String) {
        if text.hasPrefix("install:") {
            let installID = String(text.dropFirst("install:".count))
            guard !installID.isEmpty else { return nil }
            self = .install(installID)
        } else if text.hasPrefix("device:") {
            let ids = text.dropFirst("device:".count)
            guard let slash = ids.firstIndex(of: "/") else { return nil }
            let userID = String(ids[..<slash]), deviceID = String(ids[ids.index(after: slash)...])
            guard !userID.isEmpty, !deviceID.isEmpty, !deviceID.contains("/") else { return nil }
            self = .device(userID: userID, deviceID: deviceID)
        } else {
            return nil
        }
    }
}
