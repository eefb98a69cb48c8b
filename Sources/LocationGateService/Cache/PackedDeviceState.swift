import LocationAuthorization

/// The parts of a device state that many devices share: the context (platform, OS version, app
/// version, Info.plist keys) and the service sessions (most devices hold none, or one of a
/// handful of shapes). The cache stores each distinct value once per generation.
struct SharedDeviceParts: Sendable, Hashable {
    var context: DeviceContext
    /// The iOS 18 sessions and Android's permissions, boxed and nil while both are at their
    /// start (most devices): a table entry then costs a pointer for them, not their size.
    var extras: Extras?

    final class Extras: Sendable, Hashable {
        let sessionState: ServiceSessionState
        let android: AndroidPermissionState

        init(sessionState: ServiceSessionState, android: AndroidPermissionState) {
            self.sessionState = sessionState
            self.android = android
        }

        static func == (lhs: Extras, rhs: Extras) -> Bool {
            lhs.sessionState == rhs.sessionState && lhs.android == rhs.android
        }

        func hash(into hasher: inout Hasher) {
            hasher.combine(sessionState)
            hasher.combine(android)
        }
    }

    private static let startSessions = ServiceSessionState()
    private static let startAndroid = AndroidPermissionState()

    init(of state: DeviceState) {
        context = state.context
        extras = state.sessionState == Self.startSessions && state.android == Self.startAndroid
            ? nil : Extras(sessionState: state.sessionState, android: state.android)
    }

    var sessionState: ServiceSessionState { extras?.sessionState ?? Self.startSessions }
    var android: AndroidPermissionState { extras?.android ?? Self.startAndroid }
}

/// A cached device state in 8 bytes: the flags and enums of `DeviceState` in one word, and the
/// index of its shared parts in a table that devices with the same parts share.
///
/// Why: the cache holds every active device of every app. A `DeviceState` with its context
/// inline is about 90 bytes before the dictionary's own overhead, and most devices of an app
/// report one of a handful of contexts and hold one of a handful of session shapes.
struct PackedDeviceState: Sendable, Hashable {
    var bits: UInt32
    var shared: UInt32

    private static let authorizations = Authorization.allCases
    private static let prompts = Prompt.allCases
    private static let accuracies = Accuracy.allCases

    init(_ state: DeviceState, shared: UInt32) {
        var bits = UInt32(Self.authorizations.firstIndex(of: state.authorization) ?? 0)  // 2 bits
        bits |= UInt32(state.pendingPrompt.flatMap { Self.prompts.firstIndex(of: $0).map { $0 + 1 } } ?? 0) << 2  // 4 bits
        bits |= UInt32(Self.accuracies.firstIndex(of: state.accuracy) ?? 0) << 6
        let flags = [state.provisional, state.temporary, state.alwaysPromptUsed, state.temporaryFullAccuracy,
                     state.locationServicesEnabled, state.restricted, state.inUse, state.inferredAllowWhileUsing,
                     state.inForeground]
        for (offset, flag) in flags.enumerated() where flag { bits |= 1 << (7 + offset) }
        self.bits = bits
        self.shared = shared
    }

    func state(shared parts: SharedDeviceParts) -> DeviceState {
        func flag(_ offset: Int) -> Bool { bits & (1 << (7 + offset)) != 0 }
        var state = DeviceState()
        state.authorization = Self.authorizations[Int(bits & 0b11)]
        let prompt = Int(bits >> 2 & 0b1111)
        state.pendingPrompt = prompt == 0 || prompt > Self.prompts.count ? nil : Self.prompts[prompt - 1]
        state.accuracy = Self.accuracies[Int(bits >> 6 & 1)]
        state.provisional = flag(0)
        state.temporary = flag(1)
        state.alwaysPromptUsed = flag(2)
        state.temporaryFullAccuracy = flag(3)
        state.locationServicesEnabled = flag(4)
        state.restricted = flag(5)
        state.inUse = flag(6)
        state.inferredAllowWhileUsing = flag(7)
        state.inForeground = flag(8)
        state.context = parts.context
        state.sessionState = parts.sessionState
        state.android = parts.android
        return state
    }
}

/// The shared parts of one cache generation, each stored once and referred to by index.
struct SharedPartsTable {
    private(set) var parts: [SharedDeviceParts] = []
    private var indexes: [SharedDeviceParts: UInt32] = [:]

    /// The parts' index, and whether they were added now.
    mutating func index(of value: SharedDeviceParts) -> (UInt32, added: Bool) {
        if let index = indexes[value] { return (index, false) }
        let index = UInt32(parts.count)
        parts.append(value)
        indexes[value] = index
        return (index, true)
    }
}
