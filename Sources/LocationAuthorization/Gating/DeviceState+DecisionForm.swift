extension DeviceState {
    /// The state reduced to what a gate decision reads of it, with the client's free text left
    /// out: every state with the same form gets the same decision for every feature, once the
    /// device's app version is given back (`decideForm`).
    ///
    /// A preview of a catalog change and the dashboard's coverage decide each distinct state of
    /// an app (SPEC §15). An ingest key can put every device in a state of its own through
    /// fields no decision reads (purpose keys, session keys, an install id) or reads only
    /// through a comparison (an app version against a floor); their forms are few, so those
    /// passes decide forms, not states, and compare each device's app version with the floors
    /// themselves. What is left out or reduced:
    /// - `installID`: gates never read it;
    /// - the app version: only a floor reads it (`AppVersion.isMet`), and `decideForm` puts back
    ///   a version that meets the feature's floor or none;
    /// - purpose keys: a decision asks only whether any is declared (`declaresAnyPurposeKey`);
    /// - usage descriptions: only the keys the product knows are ever looked up;
    /// - the OS version: its major, and its minor only where a rule reads it (13.0-13.3);
    /// - service sessions: their keys and purpose keys; sessions with the same flags are one.
    ///
    /// A property test decides random states and their forms for every kind of feature and
    /// checks that the decisions are equal (`DecisionFormTests`): a rule that starts to read a
    /// field left out here fails it.
    public var decisionForm: DeviceState {
        var form = self
        form.installID = nil
        form.context.installID = nil
        form.context.appVersion = nil
        if let keys = context.temporaryUsagePurposeKeys, !keys.isEmpty {
            // Unknown means "any key", as a non-empty set does for a decision.
            form.context.temporaryUsagePurposeKeys = nil
        }
        if let keys = context.usageDescriptions {
            form.context.usageDescriptions = keys.intersection(UsageDescriptionKey.all)
        }
        if let os = context.osVersion {
            form.context.osVersion = OSVersion(os.major, os.major == 13 ? min(os.minor, 4) : 0)
        }
        var sessions: [String: ServiceSession] = [:]
        var seen: Set<SessionFlags> = []
        for session in sessionState.sessions.values.sorted(by: { SessionFlags($0) < SessionFlags($1) }) {
            let flags = SessionFlags(session)
            guard seen.insert(flags).inserted else { continue }
            sessions[String(sessions.count)] = ServiceSession(
                requirement: session.requirement, active: session.active, resumable: session.resumable)
        }
        form.sessionState.sessions = sessions
        return form
    }

    /// The decision for `feature` of a device whose state has `self` as its `decisionForm`,
    /// given whether the device's app version meets the feature's floor: equal to the decision
    /// over the device's whole state.
    public func decideForm(_ feature: Feature, meetsAppVersionFloor: Bool, version: Int64) -> GateDecision {
        var state = self
        state.context.appVersion = meetsAppVersionFloor ? feature.minAppVersion?.text : nil
        return state.decide(feature, version: version)
    }
}

/// What a decision reads of one service session.
private struct SessionFlags: Hashable, Comparable {
    var requirement: String
    var active: Bool
    var resumable: Bool

    init(_ session: ServiceSession) {
        requirement = session.requirement.rawValue
        active = session.active
        resumable = session.resumable
    }

    static func < (left: SessionFlags, right: SessionFlags) -> Bool {
        (left.requirement, left.active ? 1 : 0, left.resumable ? 1 : 0) < (right.requirement, right.active ? 1 : 0, right.resumable ? 1 : 0)
    }
}
