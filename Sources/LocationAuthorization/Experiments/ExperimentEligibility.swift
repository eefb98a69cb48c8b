/// Who takes part in an experiment (SPEC §16 `eligible`): every condition given must hold; one
/// left out (nil) holds for every device.
///
/// Checked only until a device is exposed: an exposed device keeps its variant whatever its
/// state becomes (sticky), so that a person asked once is counted once, in the variant that
/// asked them. A device not eligible gets the control with reason `notEligible` and no exposure.
public struct ExperimentEligibility: Sendable, Hashable {
    /// The platforms as `contextReported` names them (`android` included). A device whose
    /// context reported no platform matches none of them.
    public let platforms: [Platform]?
    /// The statuses as SPEC §2 names them (`DeviceState.status`).
    public let statuses: [AuthorizationStatus]?
    /// The oldest app version, compared as a feature's floor (SPEC §15, `AppVersion.isMet`): a
    /// device that reported no `appVersion` is below every floor.
    public let minAppVersion: AppVersion?

    /// Everyone.
    public init() {
        self.platforms = nil
        self.statuses = nil
        self.minAppVersion = nil
    }

    /// The conditions given. A list given twice the same entry keeps it once, in its first
    /// place (as a feature's `services` do). An empty list is refused, naming the field: it
    /// would admit no device, so the experiment would expose no one, which is never what was
    /// meant (leave the field out to admit every device).
    public init(platforms: [Platform]? = nil, statuses: [AuthorizationStatus]? = nil, minAppVersion: AppVersion? = nil)
        throws(EventValidationError)
    {
        if let platforms, platforms.isEmpty {
            throw EventValidationError.invalid("eligible.platforms", "must name at least one platform; leave it out to admit every platform")
        }
        if let statuses, statuses.isEmpty {
            throw EventValidationError.invalid("eligible.statuses", "must name at least one status; leave it out to admit every status")
        }
        self.platforms = platforms.map { Self.once($0) }
        self.statuses = statuses.map { Self.once($0) }
        self.minAppVersion = minAppVersion
    }

    /// Whether a device in `state` may be exposed: its latest context's platform is one of
    /// `platforms`, its status one of `statuses`, and its `appVersion` meets `minAppVersion`,
    /// for those given. Reads nothing but the state: no I/O, no clock.
    public func admits(_ state: DeviceState) -> Bool {
        if let platforms {
            guard let platform = state.context.platform, platforms.contains(platform) else { return false }
        }
        if let statuses, !statuses.contains(state.status) { return false }
        if let minAppVersion, !minAppVersion.isMet(by: state.context.appVersion) { return false }
        return true
    }

    /// Whether every device is admitted.
    public var admitsEveryone: Bool { platforms == nil && statuses == nil && minAppVersion == nil }

    private static func once<Element: Hashable>(_ list: [Element]) -> [Element] {
        var seen = Set<Element>()
        return list.filter { seen.insert($0).inserted }
    }
}
