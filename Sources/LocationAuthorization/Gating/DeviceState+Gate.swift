extension DeviceState {
    /// The gate decision for one feature (SPEC §4), with the verdict of the device's platform
    /// rules (`PlatformRules.verdict`): the fields every decision carries come from the state,
    /// the reason, action and missing keys from the rules.
    public func decide(_ feature: Feature, version: Int64) -> GateDecision {
        let rules = family.rules
        let tier = rules.requiredTier(of: feature, state: self)
        let verdict = rules.verdict(for: feature, tier: tier, state: self)
        var decision = GateDecision(
            feature: feature.key, enabled: verdict.reason == .authorized, reason: verdict.reason, action: verdict.action,
            status: status, provisional: provisional, temporary: temporary, accuracy: effectiveAccuracy,
            requiredTier: tier, version: version)
        decision.missingKeys = verdict.missingKeys
        return decision
    }
}
