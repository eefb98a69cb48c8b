/// The JSON form of a device state (SPEC §5 `state` objects): every field of §2 plus the derived
/// `status`; `pendingPrompt` is `none` when nothing is pending. The same form is stored in the
/// projection, so decoding accepts exactly what encoding writes.
extension DeviceState: Codable {
    private enum CodingKeys: String, CodingKey {
        case authorization, provisional, temporary, alwaysPromptUsed, pendingPrompt, accuracy
        case temporaryFullAccuracy, locationServicesEnabled, restricted, inUse, inferredAllowWhileUsing, context, status
        case inForeground, sessions, backgroundActivity, backgroundActivityResumable, monitorLimited
        case sessionPromptFailureReported
        case foreground, background, denials, blocked, pendingRequest, correctableAnswer, leftForegroundSinceAnswer
        case buttonConsents, locationButtonSession, buttonGrant, approximateUnderButton, neverInSettings
        case installID = "installId"
    }

    /// `denials`: per group, and precise (D11; absent in states stored before it).
    private struct GroupCounts: Codable {
        var foreground: Int
        var background: Int
        var precise: Int?
    }

    /// `blocked`: per group, and precise (D11; absent in states stored before it).
    private struct GroupFlags: Codable {
        var foreground: Bool
        var background: Bool
        var precise: Bool?
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init()
        authorization = try container.decode(Authorization.self, forKey: .authorization)
        provisional = try container.decode(Bool.self, forKey: .provisional)
        temporary = try container.decode(Bool.self, forKey: .temporary)
        alwaysPromptUsed = try container.decode(Bool.self, forKey: .alwaysPromptUsed)
        let prompt = try container.decode(String.self, forKey: .pendingPrompt)
        pendingPrompt = prompt == "none" ? nil : Prompt(rawValue: prompt)
        accuracy = try container.decode(Accuracy.self, forKey: .accuracy)
        temporaryFullAccuracy = try container.decode(Bool.self, forKey: .temporaryFullAccuracy)
        locationServicesEnabled = try container.decode(Bool.self, forKey: .locationServicesEnabled)
        restricted = try container.decode(Bool.self, forKey: .restricted)
        inUse = try container.decode(Bool.self, forKey: .inUse)
        // Absent in states stored before O2.
        inferredAllowWhileUsing = try container.decodeIfPresent(Bool.self, forKey: .inferredAllowWhileUsing) ?? false
        context = try container.decodeIfPresent(DeviceContext.self, forKey: .context) ?? DeviceContext()
        installID = try container.decodeIfPresent(String.self, forKey: .installID)
        // Absent in states stored before service sessions (SPEC §11): the defaults.
        inForeground = try container.decodeIfPresent(Bool.self, forKey: .inForeground) ?? true
        sessionState.sessions = try container.decodeIfPresent([String: ServiceSession].self, forKey: .sessions) ?? [:]
        sessionState.backgroundActivity = try container.decodeIfPresent(Bool.self, forKey: .backgroundActivity) ?? false
        sessionState.backgroundActivityResumable =
            try container.decodeIfPresent(Bool.self, forKey: .backgroundActivityResumable) ?? false
        sessionState.monitorLimited = try container.decodeIfPresent(Bool.self, forKey: .monitorLimited) ?? false
        sessionState.promptFailureReported =
            try container.decodeIfPresent(Bool.self, forKey: .sessionPromptFailureReported) ?? false
        // Android's members, on an Android device's state only (SPEC §12).
        if let foreground = try container.decodeIfPresent(ForegroundGrant.self, forKey: .foreground) {
            android.foreground = foreground
            android.background = try container.decode(Bool.self, forKey: .background)
            let denials = try container.decode(GroupCounts.self, forKey: .denials)
            android.foregroundDenials = denials.foreground
            android.backgroundDenials = denials.background
            android.preciseDenials = denials.precise ?? 0
            let blocked = try container.decode(GroupFlags.self, forKey: .blocked)
            android.foregroundBlocked = blocked.foreground
            android.backgroundBlocked = blocked.background
            android.preciseBlocked = blocked.precise ?? false
            android.pendingRequest = Set(try container.decode([AndroidPermission].self, forKey: .pendingRequest))
            android.correctableAnswer = try container.decodeIfPresent(PromptChoice.self, forKey: .correctableAnswer)
            android.leftForegroundSinceAnswer = try container.decode(Bool.self, forKey: .leftForegroundSinceAnswer)
            // The location button (B1-B7); absent in states stored before it.
            android.buttonConsents = try container.decodeIfPresent(Int.self, forKey: .buttonConsents) ?? 0
            android.locationButtonSession = try container.decodeIfPresent(Bool.self, forKey: .locationButtonSession) ?? false
            android.buttonGrant = try container.decodeIfPresent(Bool.self, forKey: .buttonGrant) ?? false
            android.approximateUnderButton = try container.decodeIfPresent(Bool.self, forKey: .approximateUnderButton) ?? false
            android.neverInSettings = try container.decodeIfPresent(Bool.self, forKey: .neverInSettings) ?? false
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(authorization, forKey: .authorization)
        try container.encode(provisional, forKey: .provisional)
        try container.encode(temporary, forKey: .temporary)
        try container.encode(alwaysPromptUsed, forKey: .alwaysPromptUsed)
        try container.encode(pendingPrompt?.rawValue ?? "none", forKey: .pendingPrompt)
        try container.encode(accuracy, forKey: .accuracy)
        try container.encode(temporaryFullAccuracy, forKey: .temporaryFullAccuracy)
        try container.encode(locationServicesEnabled, forKey: .locationServicesEnabled)
        try container.encode(restricted, forKey: .restricted)
        try container.encode(inUse, forKey: .inUse)
        try container.encode(inferredAllowWhileUsing, forKey: .inferredAllowWhileUsing)
        try container.encode(inForeground, forKey: .inForeground)
        try container.encode(context, forKey: .context)
        try container.encodeIfPresent(installID, forKey: .installID)
        try container.encode(sessionState.sessions, forKey: .sessions)
        try container.encode(sessionState.backgroundActivity, forKey: .backgroundActivity)
        try container.encode(sessionState.backgroundActivityResumable, forKey: .backgroundActivityResumable)
        try container.encode(sessionState.monitorLimited, forKey: .monitorLimited)
        try container.encode(sessionState.promptFailureReported, forKey: .sessionPromptFailureReported)
        if context.family == .android {
            try container.encode(android.foreground, forKey: .foreground)
            try container.encode(android.background, forKey: .background)
            try container.encode(GroupCounts(foreground: android.foregroundDenials, background: android.backgroundDenials, precise: android.preciseDenials), forKey: .denials)
            try container.encode(GroupFlags(foreground: android.foregroundBlocked, background: android.backgroundBlocked, precise: android.preciseBlocked), forKey: .blocked)
            try container.encode(android.pendingRequest.sorted(), forKey: .pendingRequest)
            if let answer = android.correctableAnswer {
                try container.encode(answer, forKey: .correctableAnswer)
            } else {
                try container.encodeNil(forKey: .correctableAnswer)
            }
            try container.encode(android.leftForegroundSinceAnswer, forKey: .leftForegroundSinceAnswer)
            try container.encode(android.buttonConsents, forKey: .buttonConsents)
            try container.encode(android.locationButtonSession, forKey: .locationButtonSession)
            try container.encode(android.buttonGrant, forKey: .buttonGrant)
            try container.encode(android.approximateUnderButton, forKey: .approximateUnderButton)
            try container.encode(android.neverInSettings, forKey: .neverInSettings)
        }
        try container.encode(status, forKey: .status)
    }
}

/// A session in the state object (SPEC §11): `{"requirement", "fullAccuracyPurposeKey" (or
/// null), "active", "resumable"}`, plus `fullAccuracyDeclined` (V2's memory).
extension ServiceSession: Codable {
    private enum CodingKeys: String, CodingKey {
        case requirement, fullAccuracyPurposeKey, active, resumable, fullAccuracyDeclined
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            requirement: try container.decode(SessionRequirement.self, forKey: .requirement),
            fullAccuracyPurposeKey: try container.decodeIfPresent(String.self, forKey: .fullAccuracyPurposeKey),
            active: try container.decode(Bool.self, forKey: .active),
            resumable: try container.decode(Bool.self, forKey: .resumable),
            fullAccuracyDeclined: try container.decodeIfPresent(Bool.self, forKey: .fullAccuracyDeclined) ?? false)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(requirement, forKey: .requirement)
        if let fullAccuracyPurposeKey {
            try container.encode(fullAccuracyPurposeKey, forKey: .fullAccuracyPurposeKey)
        } else {
            try container.encodeNil(forKey: .fullAccuracyPurposeKey)
        }
        try container.encode(active, forKey: .active)
        try container.encode(resumable, forKey: .resumable)
        try container.encode(fullAccuracyDeclined, forKey: .fullAccuracyDeclined)
    }
}
