import LocationAuthorization

/// The parts of a device state beyond the flags and the context: the iOS 18 sessions and
/// Android's permissions. Nil (no entry) while both are at their start, as on most devices;
/// otherwise interned apart from the context, so that the few distinct values there are
/// (session shapes, grant and denial combinations) are not multiplied by every context.
struct DeviceExtras: Sendable, Hashable {
    var sessionState: ServiceSessionState
    var android: AndroidPermissionState

    private static let startSessions = ServiceSessionState()
    private static let startAndroid = AndroidPermissionState()

    /// Nil when both parts are at their start.
    init?(of state: DeviceState) {
        guard state.sessionState != Self.startSessions || state.android != Self.startAndroid else { return nil }
        sessionState = state.sessionState
        android = state.android
    }
}

/// A cached device state in 12 bytes: the flags and enums of `DeviceState` in one word, the
/// index of its context in a table that devices with the same context share, and likewise of
/// its `DeviceExtras` (0: none).
///
/// Why: the cache holds every active device of every app. A `DeviceState` with its context
/// inline is about 200 bytes before the dictionary's own overhead, and most devices of an app
/// report one of a handful of contexts and hold one of a handful of session and permission
/// shapes.
struct PackedDeviceState: Sendable, Hashable {
    var bits: UInt32
    var context: UInt32
    var extras: UInt32

    private static let authorizations = Authorization.allCases
    private static let prompts = Prompt.allCases
    private static let accuracies = Accuracy.allCases

    init(_ state: DeviceState, context: UInt32, extras: UInt32) {
        var bits = UInt32(Self.authorizations.firstIndex(of: state.authorization) ?? 0)  // 2 bits
        bits |= UInt32(state.pendingPrompt.flatMap { Self.prompts.firstIndex(of: $0).map { $0 + 1 } } ?? 0) << 2  // 4 bits
        bits |= UInt32(Self.accuracies.firstIndex(of: state.accuracy) ?? 0) << 6
        let flags = [state.provisional, state.temporary, state.alwaysPromptUsed, state.temporaryFullAccuracy,
                     state.locationServicesEnabled, state.restricted, state.inUse, state.inferredAllowWhileUsing,
                     state.inForeground]
        for (offset, flag) in flags.enumerated() where flag { bits |= 1 << (7 + offset) }
        self.bits = bits
        self.context = context
        self.extras = extras
    }

    func state(context: DeviceContext, extras: DeviceExtras?) -> DeviceState {
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
        state.context = context
        if let extras {
            state.sessionState = extras.sessionState
            state.android = extras.android
        }
        return state
    }
}

/// Values of one cache generation that devices share (contexts, extras), each stored once and
/// referred to by index.
struct InternTable<Value: Hashable & Sendable>: Sendable {
    private(set) var values: [Value] = []
    private var indexes: [Value: UInt32] = [:]

    /// The value's index, and whether it was added now.
    mutating func index(of value: Value) -> (UInt32, added: Bool) {
        if let index = indexes[value] { return (index, false) }
        let index = UInt32(values.count)
        values.append(value)
        indexes[value] = index
        return (index, true)
    }
}
