/// What counts as a grant in an experiment's results (SPEC §16 `granted`): an answer that gives
/// what the prompt asked, Always for an Always prompt.
///
/// Stricter than the prompt analytics' grant rate (§6: any answer that leaves the device
/// authorized), because an experiment compares ways of asking: a priming screen that turns an
/// Always request into people keeping While Using has not won anything the app asked for.
extension Prompt {
    /// The prompts that ask for Always (or, on Android, background location): Core Location's
    /// first Always prompt (P2; its Allow While Using grants Provisional Always), the upgrade
    /// (P3), the second prompt of Provisional Always (P4), the iOS 12 prompt (P5), and Android's
    /// background dialog and Settings page (D4).
    public var asksForAlways: Bool {
        switch self {
        case .alwaysFirst, .alwaysUpgrade, .alwaysSecond, .legacyAlways, .backgroundDialog, .backgroundSettings: true
        case .whenInUse, .fullAccuracy, .foreground, .precise, .locationButton: false
        }
    }

    /// Whether `choice`, an answer to this prompt (explicit or inferred), gave what the prompt
    /// asked; `after` is the device's state once the answer was applied.
    ///
    /// - Accuracy prompts (`fullAccuracy`, Android's `precise`): full accuracy, as §6 counts it.
    /// - The location button's consent dialog: `allow` (B3, B4).
    /// - Android's `dismissed`: never (an answer that grants nothing).
    /// - Android's background prompts: `allowAllTheTime`.
    /// - The other Always prompts: the device is in Always afterwards (Provisional Always
    ///   included, which is what the first Always prompt grants).
    /// - When In Use and Android's foreground dialog: the device is authorized afterwards.
    public func grantsWhatItAsked(_ choice: PromptChoice, after: DeviceState) -> Bool {
        if choice == .dismissed { return false }
        switch self {
        case .fullAccuracy, .precise:
            return choice == .allowFullAccuracy || choice == .precise
        case .locationButton:
            return choice == .allow
        case .backgroundDialog, .backgroundSettings:
            return choice == .allowAllTheTime
        case .alwaysFirst, .alwaysUpgrade, .alwaysSecond, .legacyAlways:
            return after.authorization == .authorizedAlways
        case .whenInUse, .foreground:
            return after.authorization == .authorizedWhenInUse || after.authorization == .authorizedAlways
        }
    }
}
