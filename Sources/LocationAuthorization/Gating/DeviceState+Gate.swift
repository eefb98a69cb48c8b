extension DeviceState {
    /// The gate decision for one feature (SPEC §4, §15), with the verdict of the device's
    /// platform rules (`PlatformRules.verdict`): the fields every decision carries come from
    /// the state, the reason, action and missing keys from the rules.
    ///
    /// The catalog's own rows (SPEC §15) come first, before every row of the platform's table
    /// (its services included), on every platform: the kill switch, then the app version floor.
    /// Their decisions still carry the device's real status and accuracy. The platform's rules
    /// have the last word (`PlatformRules.finish`: Android's location button). Every decision of the
    /// product (gates, OFREP, history's "as of", replay, the dashboard, the preview) comes
    /// through here.
    public func decide(_ feature: Feature, version: Int64) -> GateDecision {
        let rules = family.rules
        let tier = rules.requiredTier(of: feature, state: self)
        let verdict: GateVerdict
        if feature.disabled {
            verdict = GateVerdict(.disabledByOperator, .none)
        } else if let floor = feature.minAppVersion, !floor.isMet(by: context.appVersion) {
            verdict = GateVerdict(.appVersionTooOld, .updateApp)
        } else {
            verdict = rules.verdict(for: feature, tier: tier, state: self)
        }
        var decision = GateDecision(
            feature: feature.key, enabled: verdict.reason == .authorized, reason: verdict.reason, action: verdict.action,
            status: status, provisional: provisional, temporary: temporary, accuracy: effectiveAccuracy,
            requiredTier: tier, version: version)
        decision.missingKeys = verdict.missingKeys
        rules.finish(&decision, for: feature, tier: tier, state: self)
        return decision
    }
}
