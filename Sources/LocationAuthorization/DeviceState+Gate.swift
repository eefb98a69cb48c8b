extension DeviceState {
    /// The gate decision for one feature (SPEC §4): platform first, then the delegate's `switch`
    /// over the status (003 Listings 1 and 3, 004), then accuracy, and a pending prompt turns any
    /// remaining "no" into "wait for the answer".
    public func decide(_ feature: Feature, version: Int64) -> GateDecision {
        let tier = feature.requiredTier(in: context)
        var decision = GateDecision(
            feature: feature.key, enabled: false, reason: .authorized, action: .none, status: status,
            provisional: provisional, temporary: temporary, accuracy: effectiveAccuracy, requiredTier: tier,
            version: version)
        let (reason, action, missingKeys) = verdict(for: feature, tier: tier)
        decision.enabled = reason == .authorized
        decision.reason = reason
        decision.action = action
        decision.missingKeys = missingKeys
        return decision
    }

    private func verdict(for feature: Feature, tier: Tier) -> (GateReason, GateAction, [String]?) {
        let platform = context.effectivePlatform
        // A service the platform lacks decides before the status table.
        if feature.unavailableService(on: platform) != nil {
            return (.serviceUnavailable, .none, nil)
        }
        switch status {
        case .restricted:
            return (.restricted, .none, nil)
        case .denied where !locationServicesEnabled:
            return (.locationServicesDisabled, .enableLocationServices, nil)
        case .denied:
            return (.denied, .openSettings, nil)
        default:
            break
        }
        let verdict = grantVerdict(for: feature, tier: tier, platform: platform)
        // "any status, a prompt pending, feature not enabled": wait for the answer.
        if verdict.0 != .authorized && pendingPrompt != nil {
            return (.awaitingResponse, .none, nil)
        }
        return verdict
    }

    /// The rows of the §4 table below the pending-prompt row, then the accuracy check.
    private func grantVerdict(for feature: Feature, tier: Tier, platform: Platform) -> (GateReason, GateAction, [String]?) {
        switch status {
        case .notDetermined:
            let missing = UsageDescriptionKey.missingForWhenInUse(in: context)
            if !missing.isEmpty { return (.missingUsageDescription, .fixUsageDescriptions, missing) }
            // 003: ask When In Use first, whatever the feature's tier.
            return (.notDetermined, .requestWhenInUse, nil)
        case .authorizedWhenInUse:
            if tier == .always {
                if platform.isMac {
                    // When In Use and Always are functionally equivalent on the Mac (002, 004).
                    break
                }
                if platform == .tvOS || platform == .visionOS { return (.alwaysUnavailable, .none, nil) }
                if temporary { return (.temporaryAuthorization, .none, nil) }
                if alwaysPromptUsed { return (.alwaysDeclined, .openSettings, nil) }
                let missing = UsageDescriptionKey.missingForAlways(in: context)
                if !missing.isEmpty { return (.missingUsageDescription, .fixUsageDescriptions, missing) }
                return (.needsAlways, .requestAlways, nil)
            }
        case .authorizedAlways:
            break
        case .restricted, .denied:
            return (.denied, .openSettings, nil)
        }
        if feature.needsFullAccuracy && effectiveAccuracy == .reduced {
            return (.reducedAccuracy, context.declaresAnyPurposeKey ? .requestTemporaryFullAccuracy : .openSettings, nil)
        }
        return (.authorized, .none, nil)
    }
}
