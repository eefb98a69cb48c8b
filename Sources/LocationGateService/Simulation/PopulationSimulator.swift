import Foundation
import LocationAuthorization

/// A seeded generator, so that a simulated population can be reproduced.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    public init(seed: UInt64) {
        state = seed
    }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// A realistic synthetic population for demos and benchmarks: a platform and OS mix, prompts
/// answered at plausible rates, Allow Once expiring, escalations, Always events, Settings
/// changes and delegate reports. Every event is checked against the reducer as it is made, so
/// the whole population passes the real ingest path without a rejection.
public struct PopulationSimulator: Sendable {
    public var seed: UInt64
    public var start: Date
    public var span: TimeInterval
    /// Report as a real app does (O2): never `promptResponded`, but the status the delegate
    /// reports after the person answered. Answers that change nothing visible stay unanswered.
    public var observationsOnly: Bool

    public init(
        seed: UInt64 = 42, start: Date = Date(timeIntervalSince1970: 1_793_000_000), span: TimeInterval = 60 * 86_400,
        observationsOnly: Bool = false
    ) {
        self.seed = seed
        self.start = start
        self.span = span
        self.observationsOnly = observationsOnly
    }

    /// The events of device `index`, in order.
    public func device(_ index: Int) -> [EventSubmission] {
        var random = SplitMix64(seed: seed &+ UInt64(index) &* 0x2545_F491_4F6C_DD1D)
        let userID = "user-\(index / 2)"
        let deviceID = "device-\(index)"
        var clock = start.addingTimeInterval(Double.random(in: 0..<(span * 0.8), using: &random))
        var state = DeviceState()
        var events: [EventSubmission] = []

        let observationsOnly = self.observationsOnly
        func emit(_ event: LocationEvent) {
            var event = event
            if observationsOnly, case .promptResponded = event {
                var answered = state
                guard (try? answered.apply(event)) != nil else { return }
                event = .statusObserved(answered.status, accuracy: answered.effectiveAccuracy)
            }
            guard (try? state.apply(event)) != nil else { return }
            events.append(EventSubmission(id: UUID(random: &random), userId: userID, deviceId: deviceID, occurredAt: clock, event: event))
            clock.addTimeInterval(Double.random(in: 1...3600, using: &random))
        }
        func chance(_ probability: Double) -> Bool { Double.random(in: 0..<1, using: &random) < probability }
        func answer(_ weights: [(PromptChoice, Double)]) {
            guard let prompt = state.pendingPrompt else { return }
            let offered = prompt.offeredChoices(in: state.context)
            let options = weights.filter { offered.contains($0.0) }
            let total = options.reduce(0) { $0 + $1.1 }
            var pick = Double.random(in: 0..<max(total, 0.0001), using: &random)
            for (choice, weight) in options {
                pick -= weight
                if pick < 0 {
                    emit(.promptResponded(choice))
                    return
                }
            }
            if let first = offered.first { emit(.promptResponded(first)) }
        }

        let context = Self.context(&random)
        emit(.contextReported(context))
        emit(.appStateChanged(.foreground, backgroundIndicator: false))
        if chance(0.03) { emit(.statusObserved(.notDetermined, accuracy: nil)) }
        emit(.authorizationRequested(chance(0.7) ? .whenInUse : .always))
        answer([(.allowWhileUsing, 0.55), (.allowOnce, 0.2), (.dontAllow, 0.25), (.allowAlways, 0.3)])
        if state.temporary && chance(0.6) {
            emit(.appStateChanged(.background, backgroundIndicator: false))
            emit(.appStateChanged(.foreground, backgroundIndicator: false))
            if state.status == .notDetermined {
                emit(.authorizationRequested(.whenInUse))
                answer([(.allowWhileUsing, 0.6), (.allowOnce, 0.2), (.dontAllow, 0.2)])
            }
        }
        if state.status == .authorizedWhenInUse && !state.temporary && chance(0.45) {
            emit(.authorizationRequested(.always))
            answer([(.keepOnlyWhileUsing, 0.6), (.changeToAlwaysAllow, 0.4)])
        }
        if state.provisional && chance(0.7) {
            emit(.alwaysEventOccurred([AlwaysService.regionMonitoring, .visits, .significantChange][Int.random(in: 0...2, using: &random)]))
            answer([(.keepOnlyWhileUsing, 0.5), (.changeToAlwaysAllow, 0.5)])
        }
        if state.status == .authorizedAlways && chance(0.3) { emit(.alwaysEventOccurred(.regionMonitoring)) }
        if state.accuracy == .reduced && state.status.isAuthorized && chance(0.5) {
            emit(.authorizationRequested(.temporaryFullAccuracy("Navigation")))
            answer([(.allowFullAccuracy, 0.7), (.keepReducedAccuracy, 0.3)])
        }
        if chance(0.5) { emit(.statusObserved(state.status, accuracy: state.effectiveAccuracy)) }
        if chance(0.12) {
            let settings: [SettingsAuthorization] = [.never, .askNextTime, .whileUsing, .always]
            let choice = settings[Int.random(in: 0..<settings.count, using: &random)]
            if choice != .always || (context.platform != .tvOS && context.platform != .visionOS) {
                emit(.settingsChanged(authorization: choice, preciseLocation: chance(0.2) ? false : nil))
            }
        }
        if chance(0.03) { emit(.locationServicesChanged(enabled: false)) }
        if chance(0.01) { emit(.restrictionChanged(restricted: true)) }
        if chance(0.4) { emit(.appStateChanged(.terminated, backgroundIndicator: false)) }
        return events
    }

    static func context(_ random: inout SplitMix64) -> DeviceContext {
        let roll = Double.random(in: 0..<1, using: &random)
        let platform: Platform
        let versions: [String]
        switch roll {
        case ..<0.68: (platform, versions) = (.iOS, ["18.1", "17.5", "17.4", "16.7", "15.8", "13.2", "12.5"])
        case ..<0.78: (platform, versions) = (.iPadOS, ["18.1", "17.4", "16.6", "13.3"])
        case ..<0.84: (platform, versions) = (.macOS, ["15.1", "14.6"])
        case ..<0.87: (platform, versions) = (.macCatalyst, ["15.1"])
        case ..<0.94: (platform, versions) = (.watchOS, ["11.1", "10.5"])
        case ..<0.97: (platform, versions) = (.tvOS, ["18.1", "17.4"])
        default: (platform, versions) = (.visionOS, ["2.1", "1.2"])
        }
        let appVersions = ["3.2.0", "3.1.4", "3.0.0", "2.9.1"]
        var keys: Set<String> = [UsageDescriptionKey.whenInUse, UsageDescriptionKey.alwaysAndWhenInUse]
        if Double.random(in: 0..<1, using: &random) < 0.05 { keys.remove(UsageDescriptionKey.alwaysAndWhenInUse) }
        return DeviceContext(
            platform: platform, osVersion: OSVersion(versions[Int.random(in: 0..<versions.count, using: &random)]),
            appVersion: appVersions[Int.random(in: 0..<appVersions.count, using: &random)],
            usageDescriptions: keys, temporaryUsagePurposeKeys: ["Navigation"],
            defaultAccuracyReduced: Double.random(in: 0..<1, using: &random) < 0.15)
    }
}

extension UUID {
    /// A random version-4 UUID from a given generator.
    init(random: inout some RandomNumberGenerator) {
        let high = random.next()
        let low = random.next()
        var bytes = [UInt8](repeating: 0, count: 16)
        for index in 0..<8 {
            bytes[index] = UInt8(truncatingIfNeeded: high >> (8 * index))
            bytes[index + 8] = UInt8(truncatingIfNeeded: low >> (8 * index))
        }
        bytes[6] = (bytes[6] & 0x0F) | 0x40
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        self = UUID(uuid: (bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                           bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]))
    }
}
