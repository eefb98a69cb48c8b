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
    /// Android: the foreground location dialog (D2, D3).
    case foreground
    /// Android 10 (API 29): the background dialog (D4).
    case backgroundDialog
    /// Android 11+ (API 30+): the app's location page in Settings, opened by a background request (D4).
    case backgroundSettings
    /// Android 12+: the upgrade from approximate to precise (D2).
    case precise
    /// Android 17: the location button's consent dialog ("Allow … to access precise location when
    /// you choose to share it?"). Never pending: it is inferred, shown and answered in one
    /// `locationButtonResult` (B3, B4), and a dismissal is never seen (B5).
    case locationButton

    /// The prompts of Android's rules (SPEC §12); the others are Core Location's.
    public var isAndroid: Bool {
        switch self {
        case .foreground, .backgroundDialog, .backgroundSettings, .precise, .locationButton: true
        default: false
        }
    }

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
        case .foreground:
            // D2, D3: the request decides what the dialog shows (AndroidRules); this is the widest
            // set at the device's API level and targetSdk. The accuracy choices need targetSdk
            // 31+; `allowAllTheTime` is a button of the first dialog on API 29 only.
            let api = context.apiLevel ?? 35
            let target = context.targetSdk ?? api
            if api >= 31 && target >= 31 {
                return [.preciseWhileUsing, .approximateWhileUsing, .preciseOnce, .approximateOnce, .whileUsing, .onlyThisTime, .deny, .dismissed]
            }
            if api >= 30 { return [.whileUsing, .onlyThisTime, .deny, .dismissed] }
            if api == 29 { return [.allowAllTheTime, .whileUsing, .deny, .dismissed] }
            return [.whileUsing, .deny, .dismissed]
        case .backgroundDialog:
            return [.allowAllTheTime, .keepWhileUsing, .deny, .dismissed]
        case .backgroundSettings:
            return [.allowAllTheTime, .allowWhileUsing, .askEveryTime, .deny]
        case .precise:
            return [.precise, .keepApproximate, .dismissed]
        case .locationButton:
            // B3, B4: "Allow" / "Don't allow"; Back or a tap outside reaches the app as nothing (B5).
            return [.allow, .dontAllow]
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
    // Android (SPEC §12); an app never sends them, they are inferred from results.
    case whileUsing
    case onlyThisTime
    case deny
    case preciseWhileUsing
    case approximateWhileUsing
    case preciseOnce
    case approximateOnce
    case allowAllTheTime
    case keepWhileUsing
    case askEveryTime
    case precise
    case keepApproximate
    /// Android: the dialog was closed without an answer (Back, a tap outside). Android records
    /// nothing (D5, D11); it counts as an inferred answer that grants nothing.
    case dismissed
    /// Android 17: "Allow" in the location button's consent dialog (B3); its "Don't allow" is
    /// `dontAllow` (B4).
    case allow

    /// D6: the one-time form of a While-using answer to Android's foreground dialog.
    public var oneTimeForm: PromptChoice? {
        switch self {
        case .whileUsing: .onlyThisTime
        case .preciseWhileUsing: .preciseOnce
        case .approximateWhileUsing: .approximateOnce
        default: nil
        }
    }
}
