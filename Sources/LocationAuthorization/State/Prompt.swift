/// A system prompt Core Location puts on screen (SPEC §2 `pendingPrompt`, §3 P rules).
public enum Prompt: String, Sendable, Hashable, Codable, CaseIterable {
    /// The When In Use prompt after `requestWhenInUseAuthorization()` (A1, P1).
    case whenInUse
    /// The first of the two Always prompts, shown with the When In Use string (A3, P2).
    case alwaysFirst
    /// The escalation from When In Use to Always (A4, P3).
    case alwaysUpgrade
    /// The second prompt of Provisional Always, before an Always event is delivered (E1, P4).
    case alwaysSecond
    /// The iOS 12-and-earlier Always prompt (A10, P5).
    case legacyAlways
    /// The temporary full accuracy prompt (A12, P6).
    case fullAccuracy

    /// The choices this prompt offers on a device with the given context. A choice outside this
    /// list is rejected (422) and nothing is stored.
    ///
    /// - Before iOS 13 no prompt offers Allow Once (A10).
    /// - On macOS the When In Use and first Always prompts offer only Allow and Don't Allow (002).
    /// - *(decision)* tvOS prompts have no Allow Once either: tvOS apps have no in-use session that
    ///   Allow Once could expire with, and Apple's tvOS prompt shows Allow / Don't Allow.
    public func offeredChoices(in context: DeviceContext) -> [PromptChoice] {
        switch self {
        case .whenInUse, .alwaysFirst:
            if context.effectivePlatform == .macOS || context.effectivePlatform == .tvOS {
                return [.allowWhileUsing, .dontAllow]
            }
            if context.isIOSFamily(below: OSVersion(13)) {
                return [.allowWhileUsing, .dontAllow]
            }
            return [.allowWhileUsing, .allowOnce, .dontAllow]
        case .alwaysUpgrade, .alwaysSecond:
            return [.keepOnlyWhileUsing, .changeToAlwaysAllow]
        case .legacyAlways:
            if context.isIOSFamily(below: OSVersion(11)) {
                return [.allowAlways, .dontAllow]
            }
            return [.allowAlways, .allowWhileUsing, .dontAllow]
        case .fullAccuracy:
            return [.allowFullAccuracy, .keepReducedAccuracy]
        }
    }
}

/// An answer to a prompt (SPEC §1 `promptResponded.choice`).
public enum PromptChoice: String, Sendable, Hashable, Codable, CaseIterable {
    case allowWhileUsing
    case allowOnce
    case dontAllow
    case keepOnlyWhileUsing
    case changeToAlwaysAllow
    case allowAlways
    case allowFullAccuracy
    case keepReducedAccuracy
}
