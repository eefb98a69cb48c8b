extension CoreLocationRules {
    /// The tier of SPEC §4: Always if the feature says so or uses location push, or if it uses
    /// significant-change, visits or region monitoring on iOS/iPadOS 12 or earlier (002).
    public static func requiredTier(of feature: Feature, state: DeviceState) -> Tier {
        feature.requiredTier(in: state.context)
    }

    /// SPEC §4: platform first, then the delegate's `switch` over the status (003 Listings 1
    /// and 3, 004), then accuracy; a pending prompt turns any remaining "no" into "wait for the
    /// answer".
    public static func verdict(for feature: Feature, tier: Tier, state: DeviceState) -> GateVerdict {
        let platform = state.context.effectivePlatform
        // A service the platform lacks decides before the status table.
        if feature.unavailableService(on: platform) != nil {
            return GateVerdict(.serviceUnavailable, .none)
        }
        switch state.status {
        case .restricted:
            return GateVerdict(.restricted, .none)
        case .denied where !state.locationServicesEnabled:
            return GateVerdict(.locationServicesDisabled, .enableLocationServices)
        case .denied:
            return GateVerdict(.denied, .openSettings)
        default:
            break
        }
        let verdict = grantVerdict(for: feature, tier: tier, platform: platform, state: state)
        // "any status, a prompt pending, feature not enabled": wait for the answer.
        if verdict.reason != .authorized && state.pendingPrompt != nil {
            return GateVerdict(.awaitingResponse, .none)
        }
        return verdict
    }

    /// The rows of the §4 table below the pending-prompt row, then the accuracy check.
    private static func grantVerdict(for feature: Feature, tier: Tier, platform: Platform, state: DeviceState) -> GateVerdict {
        let context = state.context
        switch state.status {
        case .notDetermined:
            let missing = UsageDescriptionKey.missingForWhenInUse(in: context)
            if !missing.isEmpty { return GateVerdict(.missingUsageDescription, .fixUsageDescriptions, missingKeys: missing) }
            // 003: ask When In Use first, whatever the feature's tier.
            return GateVerdict(.notDetermined, .requestWhenInUse)
        case .authorizedWhenInUse:
            if tier == .always {
                if platform.isMac {
                    // When In Use and Always are functionally equivalent on the Mac (002, 004).
                    break
                }
                if platform == .tvOS || platform == .visionOS { return GateVerdict(.alwaysUnavailable, .none) }
                if state.temporary { return GateVerdict(.temporaryAuthorization, .none) }
                if state.alwaysPromptUsed { return GateVerdict(.alwaysDeclined, .openSettings) }
                let missing = UsageDescriptionKey.missingForAlways(in: context)
                if !missing.isEmpty { return GateVerdict(.missingUsageDescription, .fixUsageDescriptions, missingKeys: missing) }
                return GateVerdict(.needsAlways, .requestAlways)
            }
        case .authorizedAlways:
            break
        case .restricted, .denied:
            return GateVerdict(.denied, .openSettings)
        }
        if feature.delivery == .modern && context.hasServiceSessions, let verdict = sessionVerdict(for: feature, tier: tier, state: state) {
            return verdict
        }
        if feature.needsFullAccuracy && state.effectiveAccuracy == .reduced {
            return GateVerdict(.reducedAccuracy, context.declaresAnyPurposeKey ? .requestTemporaryFullAccuracy : .openSettings)
        }
        return .authorized
    }

    /// SPEC §11's rows for a `modern` feature the status table enabled, on a platform and
    /// version with sessions: what the modern APIs need beyond the authorization.
    private static func sessionVerdict(for feature: Feature, tier: Tier, state: DeviceState) -> GateVerdict? {
        let sessions = state.sessionState
        if state.context.requiresExplicitServiceSession && !sessions.holdsEffectiveAuthorizingSession {
            return GateVerdict(.serviceSessionRequired, .startServiceSession)
        }
        if tier == .always && !sessions.holdsEffectiveAlwaysSession {
            return GateVerdict(.alwaysSessionRequired, .startAlwaysSession)
        }
        let alwaysInForce = state.status == .authorizedAlways && sessions.holdsEffectiveAlwaysSession
        if tier == .whenInUse && feature.background && !sessions.backgroundActivityEffective && state.status.isAuthorized && !alwaysInForce {
            if !state.context.declaresBackgroundLocationMode {
                return GateVerdict(.insufficientlyInUse, .fixBackgroundModes, missingKeys: [UsageDescriptionKey.backgroundModes])
            }
            return GateVerdict(.insufficientlyInUse, .startBackgroundActivity)
        }
        if feature.services.contains(.regionMonitoring) && sessions.monitorLimited {
            return GateVerdict(.monitorLimitExceeded, .none)
        }
        return nil
    }
}
