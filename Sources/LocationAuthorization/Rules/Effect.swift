/// What applying one event did (SPEC §3). Stored with the event and shown in history, so the
/// JSON shape is a contract: `{"kind": ..., ...}` with the field names of SPEC §5.
public enum Effect: Sendable, Hashable {
    case promptShown(Prompt)
    case statusChanged(from: AuthorizationStatus, to: AuthorizationStatus)
    case accuracyChanged(from: Accuracy, to: Accuracy)
    case noEffect(NoEffectReason)
    case failed(FailureReason, keys: [String])
    case eventDelivered(Bool)
    case reconciled(from: AuthorizationStatus, to: AuthorizationStatus)
    /// O2: a `statusObserved` answered the pending prompt; this is the choice it implies.
    case answerInferred(prompt: Prompt, choice: PromptChoice)
    /// O2: an inferred answer turned out to be another (Allow While Using was Allow Once).
    case answerCorrected(prompt: Prompt, from: PromptChoice, to: PromptChoice)
    /// V1: a service session was added, removed, or became active or inactive.
    case sessionChanged(session: String, active: Bool)
    /// I1: the app's permission state returned to a new install's (the app was reinstalled).
    case reset(ResetReason)

    /// The `kind` field of the JSON form, one per case. Its raw values are the one spelling of
    /// the kinds: the `Codable` form below and the stored form (`StoredJSON.swift`) both write
    /// and read them, and switch over it exhaustively, so a new case is a compile error in each
    /// until it is written there.
    public enum Kind: String, Sendable, Hashable, Codable, CaseIterable {
        case promptShown
        case statusChanged
        case accuracyChanged
        case noEffect
        case failed
        case eventDelivered
        case reconciled
        case answerInferred
        case answerCorrected
        case sessionChanged
        case reset
    }

    /// The `kind` field of the JSON form.
    public var kind: Kind {
        switch self {
        case .promptShown: .promptShown
        case .statusChanged: .statusChanged
        case .accuracyChanged: .accuracyChanged
        case .noEffect: .noEffect
        case .failed: .failed
        case .eventDelivered: .eventDelivered
        case .reconciled: .reconciled
        case .answerInferred: .answerInferred
        case .answerCorrected: .answerCorrected
        case .sessionChanged: .sessionChanged
        case .reset: .reset
        }
    }
}

extension Effect {
    /// V6: the prompts Core Location showed on a session's behalf (V2, V3) among an event's
    /// effects. The effects of an event are V1's relaunch-window closing (`sessionChanged`
    /// only), then the event's own rule, which always yields an effect for a request or an
    /// Always event, then V2's prompt. So the first effect after the window's is a request's or
    /// E1's own, and V2 asks only when no prompt is pending: every other `promptShown` is a
    /// session's.
    public static func sessionPrompts(in effects: [Effect], of type: EventType) -> [Prompt] {
        let own = type == .authorizationRequested || type == .alwaysEventOccurred
            ? effects.firstIndex { if case .sessionChanged = $0 { return false } else { return true } }
            : nil
        var prompts: [Prompt] = []
        for (index, effect) in effects.enumerated() {
            // Android has no sessions: its prompts are always a request's.
            guard case .promptShown(let prompt) = effect, index != own, !prompt.isAndroid else { continue }
            prompts.append(prompt)
        }
        return prompts
    }
}

/// Why a device's permission state returned to its start (`reset.reason`).
public enum ResetReason: String, Sendable, Hashable, Codable, CaseIterable {
    /// I1: the stream's `installId` changed: the app was deleted and installed again.
    case reinstalled
}

/// Why a request or answer changed nothing (SPEC §5 noEffect reasons).
public enum NoEffectReason: String, Sendable, Hashable, Codable, CaseIterable {
    case alreadyDetermined
    case promptPending
    case temporaryAuthorization
    case alwaysAlreadyRequested
    case alreadyAlways
    case denied
    case restricted
    case notAuthorized
    case alreadyFullAccuracy
    case notInUse
    case unchanged
    case confirmed
    /// The device lacks the iOS 18 API the event is about (SPEC §11).
    case sessionsUnsupported
    /// V5: a background activity can start only in the foreground.
    case insufficientlyInUse
    /// V4: the diagnostic describes delivery (stationary, no location, ...), not authorization.
    case deliveryOnly
    /// D1: below API 23 every declared permission is granted at install.
    case grantedAtInstall
    /// D2: API 31+ ignores fine location asked without coarse.
    case fineNeedsCoarse
    /// D3: targetSdk 30+ on API 30+ ignores background asked with foreground.
    case backgroundWithForeground
    /// D4: background asked before any foreground grant.
    case foregroundFirst
    /// D5, D11: the group (or precise) is blocked; Android answers at once. B4: a location
    /// button tap while the foreground group or precise is blocked.
    case blocked
    /// B8: ACCESS_FINE_LOCATION is only for the location button: `fine` asked alone, or while
    /// approximate is granted, is refused at once (AOSP `NO_UI_REJECT_THIS_GROUP`), no denial.
    case onlyForLocationButton
    /// B2: the location button reported a grant while precise was already held.
    case alreadyGranted
    /// B4: the location button reported a refusal where a direct grant was due (device policy
    /// refused it; AOSP `POLICY_AUTO_DENIED` and its kin).
    case notGrantable
}

/// Why a request failed without a prompt (A8, K1-K3).
public enum FailureReason: String, Sendable, Hashable, Codable, CaseIterable {
    case missingUsageDescription
    case missingPurposeKey
    /// V5: `location` is missing from UIBackgroundModes.
    case missingBackgroundMode
    /// D2: the manifest does not declare the permission.
    case notDeclared
    /// D10: a location foreground service may not start.
    case foregroundServiceNotAllowed
    /// B1: the location button's session failed (`onSessionError`); `keys` holds the error's
    /// class name when the app gave it.
    case locationButtonError
}

extension Effect: Codable {
    private enum CodingKeys: String, CodingKey {
        case kind, prompt, from, to, reason, keys, delivered, choice, session, active
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let name = try container.decode(String.self, forKey: .kind)
        guard let kind = Kind(rawValue: name) else {
            throw DecodingError.dataCorruptedError(
                forKey: .kind, in: container, debugDescription: "unknown effect kind \(name)")
        }
        switch kind {
        case .promptShown:
            self = .promptShown(try container.decode(Prompt.self, forKey: .prompt))
        case .statusChanged:
            self = .statusChanged(
                from: try container.decode(AuthorizationStatus.self, forKey: .from),
                to: try container.decode(AuthorizationStatus.self, forKey: .to)
            )
        case .accuracyChanged:
            self = .accuracyChanged(
                from: try container.decode(Accuracy.self, forKey: .from),
                to: try container.decode(Accuracy.self, forKey: .to)
            )
        case .noEffect:
            self = .noEffect(try container.decode(NoEffectReason.self, forKey: .reason))
        case .failed:
            self = .failed(
                try container.decode(FailureReason.self, forKey: .reason),
                keys: try container.decode([String].self, forKey: .keys)
            )
        case .eventDelivered:
            self = .eventDelivered(try container.decode(Bool.self, forKey: .delivered))
        case .reconciled:
            self = .reconciled(
                from: try container.decode(AuthorizationStatus.self, forKey: .from),
                to: try container.decode(AuthorizationStatus.self, forKey: .to)
            )
        case .answerInferred:
            self = .answerInferred(
                prompt: try container.decode(Prompt.self, forKey: .prompt),
                choice: try container.decode(PromptChoice.self, forKey: .choice))
        case .answerCorrected:
            self = .answerCorrected(
                prompt: try container.decode(Prompt.self, forKey: .prompt),
                from: try container.decode(PromptChoice.self, forKey: .from),
                to: try container.decode(PromptChoice.self, forKey: .to))
        case .sessionChanged:
            self = .sessionChanged(
                session: try container.decode(String.self, forKey: .session),
                active: try container.decode(Bool.self, forKey: .active))
        case .reset:
            self = .reset(try container.decode(ResetReason.self, forKey: .reason))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(kind, forKey: .kind)
        switch self {
        case .promptShown(let prompt):
            try container.encode(prompt, forKey: .prompt)
        case .statusChanged(let from, let to), .reconciled(let from, let to):
            try container.encode(from, forKey: .from)
            try container.encode(to, forKey: .to)
        case .accuracyChanged(let from, let to):
            try container.encode(from, forKey: .from)
            try container.encode(to, forKey: .to)
        case .noEffect(let reason):
            try container.encode(reason, forKey: .reason)
        case .failed(let reason, let keys):
            try container.encode(reason, forKey: .reason)
            try container.encode(keys, forKey: .keys)
        case .eventDelivered(let delivered):
            try container.encode(delivered, forKey: .delivered)
        case .answerInferred(let prompt, let choice):
            try container.encode(prompt, forKey: .prompt)
            try container.encode(choice, forKey: .choice)
        case .answerCorrected(let prompt, let from, let to):
            try container.encode(prompt, forKey: .prompt)
            try container.encode(from, forKey: .from)
            try container.encode(to, forKey: .to)
        case .sessionChanged(let session, let active):
            try container.encode(session, forKey: .session)
            try container.encode(active, forKey: .active)
        case .reset(let reason):
            try container.encode(reason, forKey: .reason)
        }
    }
}
