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
///
/// A share of the devices (`modernShare`) run iOS 18, iPadOS 18, watchOS 11 or visionOS 2 with
/// an app that uses the iOS 18 APIs (SPEC §11): service sessions, Core Location's own prompts,
/// background activity sessions, relaunches and diagnostics
/// (`PopulationSimulator+ServiceSessions.swift`). Whether a device is one of them is drawn from a
/// generator of its own, so the other devices are exactly those of a population without them
/// (`modernShare: 0`).
///
/// A share of the devices (`androidShare`, from `platform`: none for `ios`, the default; all
/// for `android`; about 45% for `mixed`) run Android, API 28 to 35, with an app that reports
/// permission requests, results and observations (SPEC §12, `PopulationSimulator+Android.swift`).
/// Whether a device is one of them is drawn from another generator of its own, so the Apple
/// devices of a mixed population are exactly those of the same device indexes without Android
/// (`androidShare: 0`, the `ios` population).
///
/// A share of the Android devices (`buttonShare`, about 10% unless told otherwise) run Android
/// 17 (API 37) with an app that uses the location button (SPEC §12, "The location button", B1-B8;
/// `PopulationSimulator+LocationButton.swift`). Whether an Android device is one of them is drawn
/// from a third generator of its own, so the other Android devices are exactly those of a
/// population without them (`buttonShare: 0`).
public struct PopulationSimulator: Sendable {
    public var seed: UInt64
    public var start: Date
    public var span: TimeInterval
    /// Report as a real app does (O2): never `promptResponded`, but the status the delegate
    /// reports after the person answered (or, for the answers a delegate cannot see, the
    /// diagnostic a service session reports, V4). Answers that change nothing visible stay
    /// unanswered.
    public var observationsOnly: Bool
    /// The share of devices (0 to 1) whose app uses service sessions and diagnostics (SPEC §11).
    public var modernShare: Double

    /// The share of devices (0 to 1) that run Android (SPEC §12); `modernShare` applies to the
    /// others.
    public var androidShare: Double

    /// The share of the Android devices (0 to 1) on API 37 whose app uses the location button
    /// (SPEC §12); the others run API 28 to 35 as before.
    public var buttonShare: Double

    /// The share of `locgate simulate` unless told otherwise.
    public static let defaultModernShare = 0.3
    /// The Android share of `--platform mixed`.
    public static let mixedAndroidShare = 0.45
    /// The share of the Android devices on API 37 with the location button unless told
    /// otherwise (`locgate simulate --button-share`, whose default is 0).
    public static let defaultButtonShare = 0.1

    public init(
        seed: UInt64 = 42, start: Date = Date(timeIntervalSince1970: 1_793_000_000), span: TimeInterval = 60 * 86_400,
        observationsOnly: Bool = false, modernShare: Double = PopulationSimulator.defaultModernShare,
        platform: SimulatedPlatform = .ios, buttonShare: Double = PopulationSimulator.defaultButtonShare
    ) {
        self.seed = seed
        self.start = start
        self.span = span
        self.observationsOnly = observationsOnly
        self.modernShare = modernShare
        self.androidShare = platform.androidShare
        self.buttonShare = buttonShare
    }

    /// The events of device `index`, in order.
    public func device(_ index: Int) -> [EventSubmission] {
        var random = SplitMix64(seed: seed &+ UInt64(index) &* 0x2545_F491_4F6C_DD1D)
        let clock = start.addingTimeInterval(Double.random(in: 0..<(span * 0.8), using: &random))
        var device = SimulatedDevice(
            random: random, userID: "user-\(index / 2)", deviceID: "device-\(index)", clock: clock,
            observationsOnly: observationsOnly)
        if runsAndroid(index) {
            var script = AndroidScript(device: device)
            if usesLocationButton(index) {
                script.runLocationButtonApp()
            } else {
                script.run()
            }
            return script.device.events
        }
        if usesServiceSessions(index) {
            var script = ServiceSessionScript(device: device)
            script.run()
            return script.device.events
        }
        Self.simulateLocationManager(&device)
        return device.events
    }

    /// Whether device `index` is one of the `modernShare`: drawn from a generator of its own, so
    /// that the draws of every other device are those of a population without them.
    /// Never an Android device.
    public func usesServiceSessions(_ index: Int) -> Bool {
        guard modernShare > 0, !runsAndroid(index) else { return false }
        var chooser = SplitMix64(seed: (seed ^ 0x6A09_E667_F3BC_C909) &+ UInt64(index) &* 0xD1B5_4A32_D192_ED03)
        return Double.random(in: 0..<1, using: &chooser) < modernShare
    }

    /// Whether device `index` is one of the `androidShare`: drawn from a generator of its own (no
    /// draw at all with a share of 0), so that the draws of every other device are those of a
    /// population without Android.
    public func runsAndroid(_ index: Int) -> Bool {
        guard androidShare > 0 else { return false }
        var chooser = SplitMix64(seed: (seed ^ 0xBB67_AE85_84CA_A73B) &+ UInt64(index) &* 0x9FB2_1C65_1E98_DF25)
        return Double.random(in: 0..<1, using: &chooser) < androidShare
    }

    /// Whether device `index` is one of the `buttonShare` of the Android devices: drawn from a
    /// generator of its own (no draw at all with a share of 0), so that the draws of every other
    /// Android device are those of a population without the button. Never an Apple device.
    public func usesLocationButton(_ index: Int) -> Bool {
        guard buttonShare > 0, runsAndroid(index) else { return false }
        var chooser = SplitMix64(seed: (seed ^ 0x3C6E_F372_FE94_F82B) &+ UInt64(index) &* 0xA54F_F53A_5F1D_36F1)
        return Double.random(in: 0..<1, using: &chooser) < buttonShare
    }

    /// A device whose app asks with `CLLocationManager`'s request methods alone, on every
    /// platform and OS of the mix.
    static func simulateLocationManager(_ device: inout SimulatedDevice) {
        let context = Self.context(&device.random)
        device.emit(.contextReported(context))
        device.emit(.appStateChanged(.foreground, backgroundIndicator: false))
        if device.chance(0.03) { device.emit(.statusObserved(.notDetermined, accuracy: nil)) }
        let request: AuthorizationRequest = device.chance(0.7) ? .whenInUse : .always
        device.emit(.authorizationRequested(request))
        device.answer([(.allowWhileUsing, 0.55), (.allowOnce, 0.2), (.dontAllow, 0.25), (.allowAlways, 0.3)])
        if device.state.temporary && device.chance(0.6) {
            device.emit(.appStateChanged(.background, backgroundIndicator: false))
            device.emit(.appStateChanged(.foreground, backgroundIndicator: false))
            if device.state.status == .notDetermined {
                device.emit(.authorizationRequested(.whenInUse))
                device.answer([(.allowWhileUsing, 0.6), (.allowOnce, 0.2), (.dontAllow, 0.2)])
            }
        }
        if device.state.status == .authorizedWhenInUse && !device.state.temporary && device.chance(0.45) {
            device.emit(.authorizationRequested(.always))
            device.answer([(.keepOnlyWhileUsing, 0.6), (.changeToAlwaysAllow, 0.4)])
        }
        if device.state.provisional && device.chance(0.7) {
            let service = [AlwaysService.regionMonitoring, .visits, .significantChange][Int.random(in: 0...2, using: &device.random)]
            device.emit(.alwaysEventOccurred(service))
            device.answer([(.keepOnlyWhileUsing, 0.5), (.changeToAlwaysAllow, 0.5)])
        }
        if device.state.status == .authorizedAlways && device.chance(0.3) { device.emit(.alwaysEventOccurred(.regionMonitoring)) }
        if device.state.accuracy == .reduced && device.state.status.isAuthorized && device.chance(0.5) {
            device.emit(.authorizationRequested(.temporaryFullAccuracy("Navigation")))
            device.answer([(.allowFullAccuracy, 0.7), (.keepReducedAccuracy, 0.3)])
        }
        if device.chance(0.5) {
            let status = device.state.status
            let accuracy = device.state.effectiveAccuracy
            device.emit(.statusObserved(status, accuracy: accuracy))
        }
        if device.chance(0.12) {
            let settings: [SettingsAuthorization] = [.never, .askNextTime, .whileUsing, .always]
            let choice = settings[Int.random(in: 0..<settings.count, using: &device.random)]
            if choice != .always || (context.platform != .tvOS && context.platform != .visionOS) {
                let precise: Bool? = device.chance(0.2) ? false : nil
                device.emit(.settingsChanged(authorization: choice, preciseLocation: precise))
            }
        }
        if device.chance(0.03) { device.emit(.locationServicesChanged(enabled: false)) }
        if device.chance(0.01) { device.emit(.restrictionChanged(restricted: true)) }
        if device.chance(0.4) { device.emit(.appStateChanged(.terminated, backgroundIndicator: false)) }
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

/// One device being simulated: its stream, the state the reducer gives it, and its generator.
struct SimulatedDevice {
    var random: SplitMix64
    let userID: String
    let deviceID: String
    var clock: Date
    let observationsOnly: Bool
    var state = DeviceState()
    var events: [EventSubmission] = []

    init(random: SplitMix64, userID: String, deviceID: String, clock: Date, observationsOnly: Bool) {
        self.random = random
        self.userID = userID
        self.deviceID = deviceID
        self.clock = clock
        self.observationsOnly = observationsOnly
    }

    /// Appends the event if the reducer takes it (else nothing happens) and returns its effects.
    /// With `observationsOnly`, an answer is reported as the status the delegate then sees.
    @discardableResult
    mutating func emit(_ event: LocationEvent) -> [Effect]? {
        var event = event
        if observationsOnly, case .promptResponded = event {
            var answered = state
            guard (try? answered.apply(event)) != nil else { return nil }
            event = .statusObserved(answered.status, accuracy: answered.effectiveAccuracy)
        }
        guard let effects = try? state.apply(event) else { return nil }
        let id = UUID(random: &random)
        events.append(EventSubmission(id: id, userId: userID, deviceId: deviceID, occurredAt: clock, event: event))
        clock.addTimeInterval(Double.random(in: 1...3600, using: &random))
        return effects
    }

    mutating func chance(_ probability: Double) -> Bool {
        Double.random(in: 0..<1, using: &random) < probability
    }

    /// A uniform draw in 0..<1.
    mutating func uniform() -> Double {
        Double.random(in: 0..<1, using: &random)
    }

    /// One of `count` items, uniformly.
    mutating func index(below count: Int) -> Int {
        Int.random(in: 0..<count, using: &random)
    }

    /// The person's choice at the pending prompt, by weight among the choices it offers; nil
    /// (and no draw) when no prompt is pending.
    mutating func pick(_ weights: [(PromptChoice, Double)]) -> PromptChoice? {
        guard let prompt = state.pendingPrompt else { return nil }
        let offered = prompt.offeredChoices(in: state.context)
        let options = weights.filter { offered.contains($0.0) }
        let total = options.reduce(0) { $0 + $1.1 }
        var pick = Double.random(in: 0..<max(total, 0.0001), using: &random)
        for (choice, weight) in options {
            pick -= weight
            if pick < 0 { return choice }
        }
        return offered.first
    }

    /// Answers the pending prompt, if any.
    mutating func answer(_ weights: [(PromptChoice, Double)]) {
        if let choice = pick(weights) { emit(.promptResponded(choice)) }
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
