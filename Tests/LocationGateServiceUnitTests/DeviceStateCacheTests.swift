import Foundation
import LocationAuthorization
import LocationGateSimulation
import PostgresClient
import Testing

@testable import EventLog
@testable import LocationGateService

@Suite("The device cache's packed states", .timeLimit(.minutes(1)))
struct DeviceStateCacheTests {
    /// Every combination of the packed fields.
    static var allStates: [DeviceState] {
        var states: [DeviceState] = []
        for authorization in Authorization.allCases {
            for prompt in [nil] + Prompt.allCases.map(Optional.some) {
                for accuracy in Accuracy.allCases {
                    for flags in 0..<512 {
                        var state = DeviceState()
                        state.authorization = authorization
                        state.pendingPrompt = prompt
                        state.accuracy = accuracy
                        state.provisional = flags & 1 != 0
                        state.temporary = flags & 2 != 0
                        state.alwaysPromptUsed = flags & 4 != 0
                        state.temporaryFullAccuracy = flags & 8 != 0
                        state.locationServicesEnabled = flags & 16 != 0
                        state.restricted = flags & 32 != 0
                        state.inUse = flags & 64 != 0
                        state.inferredAllowWhileUsing = flags & 128 != 0
                        state.inForeground = flags & 256 != 0
                        states.append(state)
                    }
                }
            }
        }
        return states
    }

    @Test("Every combination of flags and enums packs and unpacks to itself")
    func packing() {
        let states = Self.allStates
        #expect(states.count == 4 * (Prompt.allCases.count + 1) * 2 * 512)
        var seen: Set<UInt32> = []
        for state in states {
            let packed = PackedDeviceState(state, context: 3, extras: 0)
            #expect(packed.state(context: state.context, extras: DeviceExtras(of: state)) == state)
            seen.insert(packed.bits)
        }
        #expect(seen.count == states.count)
    }

    /// The fields `PackedDeviceState` carries (its bits, and the context and sessions by index). A field added
    /// to `DeviceState` and not to the packing would silently vanish from every cached device:
    /// this list and the round trip above have to learn it first.
    static let packedFields: Set<String> = [
        "authorization", "provisional", "temporary", "alwaysPromptUsed", "pendingPrompt", "accuracy",
        "temporaryFullAccuracy", "locationServicesEnabled", "restricted", "inUse", "inferredAllowWhileUsing", "context",
        "inForeground", "sessionState", "android",
    ]

    /// Fields of `DeviceState` that only the projection keeps: the rules need them to apply the
    /// next event, gates never read them, so the cache (which answers gates) leaves them out.
    /// I1's `installID` is one per device and would cost the cache a string per device.
    static let projectionOnlyFields: Set<String> = ["installID"]

    @Test("Every stored field of DeviceState is one the packed form carries")
    func everyFieldPacked() {
        let fields = Set(Mirror(reflecting: DeviceState()).children.compactMap(\.label)).subtracting(Self.projectionOnlyFields)
        #expect(fields == Self.packedFields, "DeviceState's fields changed: carry \(fields.subtracting(Self.packedFields).sorted()) in PackedDeviceState, then list them here")
        // Each field, changed alone from its default, survives the packing.
        var changed: [String: DeviceState] = [:]
        var state = DeviceState(); state.authorization = .authorizedAlways; changed["authorization"] = state
        state = DeviceState(); state.provisional = true; changed["provisional"] = state
        state = DeviceState(); state.temporary = true; changed["temporary"] = state
        state = DeviceState(); state.alwaysPromptUsed = true; changed["alwaysPromptUsed"] = state
        state = DeviceState(); state.pendingPrompt = Prompt.allCases.last; changed["pendingPrompt"] = state
        state = DeviceState(); state.accuracy = .reduced; changed["accuracy"] = state
        state = DeviceState(); state.temporaryFullAccuracy = true; changed["temporaryFullAccuracy"] = state
        state = DeviceState(); state.locationServicesEnabled = false; changed["locationServicesEnabled"] = state
        state = DeviceState(); state.restricted = true; changed["restricted"] = state
        state = DeviceState(); state.inUse = false; changed["inUse"] = state
        state = DeviceState(); state.inferredAllowWhileUsing = true; changed["inferredAllowWhileUsing"] = state
        state = DeviceState(); state.context = DeviceContext(platform: .macOS, defaultAccuracyReduced: true); changed["context"] = state
        state = DeviceState(); state.inForeground = false; changed["inForeground"] = state
        state = DeviceState()
        state.sessionState.sessions["nav"] = ServiceSession(requirement: .always, fullAccuracyPurposeKey: "Nav", active: true)
        state.sessionState.backgroundActivity = true
        state.sessionState.monitorLimited = true
        changed["sessionState"] = state
        state = DeviceState()
        state.android.foreground = .approximate
        state.android.foregroundDenials = 1
        state.android.backgroundBlocked = true
        state.android.pendingRequest = [.coarse, .fine]
        state.android.correctableAnswer = .approximateWhileUsing
        changed["android"] = state
        #expect(Set(changed.keys) == Self.packedFields)
        for (field, state) in changed {
            #expect(state != DeviceState(), "\(field) did not change")
            let packed = PackedDeviceState(state, context: 1, extras: 2)
            #expect(packed.state(context: state.context, extras: DeviceExtras(of: state)) == state, "\(field) is lost by the packing")
        }
    }

    @Test("Apple, iOS 18 and Android devices read back exactly; their sessions and permissions are interned apart from contexts")
    func mixedPopulation() throws {
        let cache = DeviceStateCache(shardCount: 4, coherence: CacheCoherence(alwaysFollowing: true))
        let simulator = PopulationSimulator(seed: 11, modernShare: 0.5, platform: .mixed)
        let appID = UUID()
        var states: [StreamKey: DeviceState] = [:]
        for index in 0..<600 {
            var state = DeviceState()
            for submission in simulator.device(index) { _ = try? state.apply(submission.event) }
            let key = StreamKey(appID: appID, userID: "u\(index)", deviceID: "d\(index)")
            states[key] = state
            cache.store(key, version: 1, state: state, resyncs: cache.resyncCount)
        }
        #expect(states.values.contains { $0.family == .android } && states.values.contains { !$0.sessionState.sessions.isEmpty })
        for (key, state) in states {
            var gated = state
            gated.installID = nil
            #expect(cache.entry(key)?.state == gated)
            let feature = Feature(key: "f", requires: .always, services: [.standard], accuracy: .full)
            #expect(gated.decide(feature, version: 1) == state.decide(feature, version: 1), "gates never read installID")
        }
        #expect(states.values.contains { $0.installID != nil }, "the population reports install ids")
        // A packed state is 12 bytes; a slot with its version 24.
        #expect(MemoryLayout<PackedDeviceState>.size == 12)
    }

    @Test("The cache returns what it stored, with each device's own context, and only moves forward")
    func storeAndRead() {
        let cache = DeviceStateCache(shardCount: 4, coherence: CacheCoherence(alwaysFollowing: true))
        let appID = UUID()
        let contexts = [
            DeviceContext(),
            DeviceContext(platform: .iOS, osVersion: OSVersion(17, 4), appVersion: "5.2", usageDescriptions: [UsageDescriptionKey.whenInUse]),
            DeviceContext(platform: .macOS, defaultAccuracyReduced: true),
        ]
        let states = Self.allStates
        for (index, state) in states.enumerated() {
            var state = state
            state.context = contexts[index % contexts.count]
            cache.store(StreamKey(appID: appID, userID: "u\(index / 2)", deviceID: "d\(index)"), version: Int64(index + 1), state: state, resyncs: cache.resyncCount)
        }
        #expect(cache.count == states.count)
        for (index, state) in states.enumerated() {
            var state = state
            state.context = contexts[index % contexts.count]
            let entry = cache.entry(StreamKey(appID: appID, userID: "u\(index / 2)", deviceID: "d\(index)"))
            #expect(entry?.state == state)
            #expect(entry?.version == Int64(index + 1))
        }
        let key = StreamKey(appID: appID, userID: "u0", deviceID: "d0")
        cache.store(key, version: 0, state: DeviceState(), resyncs: cache.resyncCount)
        #expect(cache.entry(key)?.version == 1)
        cache.removeIfOlder(key, than: 2)
        #expect(cache.entry(key) == nil)
    }

    @Test("A NOTIFY of the service's own append leaves the cache as the append stored it; another's drops the older state and wakes the app's streams")
    func ownNotifications() {
        let cache = DeviceStateCache(shardCount: 4, coherence: CacheCoherence(alwaysFollowing: true))
        let hub = ChangeHub()
        let origin = UUID().lowercasedText
        let invalidation = DeviceCacheInvalidation(cache: cache, hub: hub, origin: origin)
        let key = StreamKey(appID: UUID(), userID: "u", deviceID: "d")
        let subscription = hub.subscribe(appID: key.appID)
        defer { subscription.cancel() }
        cache.store(key, version: 3, state: DeviceState(), resyncs: cache.resyncCount)
        let change = [StreamChange(stream: key, version: 4)]
        for payload in StreamChange.payloads(change, origin: origin) { invalidation.apply(payload) }
        #expect(cache.entry(key)?.version == 3, "its own append's notification changed nothing")
        #expect(!subscription.take().contains(.streams))
        for payload in StreamChange.payloads(change, origin: UUID().lowercasedText) { invalidation.apply(payload) }
        #expect(cache.entry(key) == nil, "another process's append dropped the older state")
        #expect(subscription.take().contains(.streams))
        cache.store(key, version: 4, state: DeviceState(), resyncs: cache.resyncCount)
        for payload in StreamChange.payloads([StreamChange(stream: key, version: 5)]) { invalidation.apply(payload) }
        #expect(cache.entry(key) == nil, "a payload without an origin (an earlier release's) is another's")
    }

    @Test("A store or a fill older than what a notification announced is refused, for an uncached device too; the memory of it is bounded")
    func storeBehindNotification() {
        let cache = DeviceStateCache(shardCount: 1, coherence: CacheCoherence(alwaysFollowing: true))
        let key = StreamKey(appID: UUID(), userID: "u", deviceID: "d")
        // Another process appended version 6 and this one was told before its own append's
        // answer (version 5) reached the cache.
        cache.removeIfOlder(key, than: 6)
        cache.store(key, version: 5, state: DeviceState(), resyncs: cache.resyncCount)
        #expect(cache.entry(key) == nil, "the older state was not cached")
        cache.fill(key, ticket: cache.ticket(key), version: 5, state: DeviceState())
        #expect(cache.entry(key) == nil, "nor filled")
        cache.store(key, version: 6, state: DeviceState(), resyncs: cache.resyncCount)
        #expect(cache.entry(key)?.version == 6)
        // Notifications of other devices push the floor out after `maxFloors` of them; the
        // device's states are cached again as before.
        for index in 0..<DeviceStateCache.maxFloors {
            cache.removeIfOlder(StreamKey(appID: key.appID, userID: "u", deviceID: "other-\(index)"), than: 1)
        }
        cache.remove(key)
        cache.store(key, version: 2, state: DeviceState(), resyncs: cache.resyncCount)
        #expect(cache.entry(key)?.version == 2, "the floor is forgotten after maxFloors other notifications")
    }

    @Test("An append's answer stores nothing after a resync that came while the append ran; one that began after it stores")
    func storeAfterResync() {
        let cache = DeviceStateCache(shardCount: 2, coherence: CacheCoherence(alwaysFollowing: true))
        let key = StreamKey(appID: UUID(), userID: "u", deviceID: "d")
        let began = cache.resyncCount
        cache.removeAll()
        cache.store(key, version: 5, state: DeviceState(), resyncs: began)
        #expect(cache.entry(key) == nil)
        cache.store(key, version: 5, state: DeviceState(), resyncs: cache.resyncCount)
        #expect(cache.entry(key)?.version == 5)
    }
}
