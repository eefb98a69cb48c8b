import EventLog
import Foundation
import LocationAuthorization
import Synchronization

/// Device states in memory, so that gates are answered without a database round trip.
///
/// Entries only move forward: a state is stored only if its version is newer than what the
/// cache holds. The writing process stores what its append computed; other processes drop the
/// entry when notified of a newer version (`CacheFollower`), and the next read loads it from
/// `device_states`.
///
/// Two guarantees beyond that:
/// - **A fill never overwrites a newer invalidation.** A read that missed takes a `Ticket`
///   (its shard's epoch) before it queries PostgreSQL; every invalidation bumps the epoch, and
///   `fill` stores nothing if the epoch moved meanwhile. So a fill racing a notification (or a
///   resync after a re-listen) is dropped instead of leaving an old state behind for good.
/// - **A store never goes behind a notification.** Each shard remembers the versions the
///   recent notifications announced (`maxFloors` devices per shard, in two halves: the window
///   a store can race is milliseconds), and `store` and `fill` refuse a state older than that.
///   An append's answer can reach `store` after another process appended to the same device
///   and this process was notified of it (the stream's lock is free from the first COMMIT);
///   without the floor the older state would stay cached. Nor does an append's answer store
///   anything after a resync that came while it ran: the notification it raced may be lost.
/// - **A byte budget.** Each shard keeps two generations: new and refreshed entries go to the
///   young one; when it reaches half the shard's budget, the old generation is dropped and the
///   young one becomes old (an approximate LRU with no per-entry bookkeeping). Contexts are
///   interned per generation, so a context no device uses any more goes with its generation.
///   The count is in bytes as allocated (dictionary storage at its capacity, heap strings,
///   contexts), not in entries: a client sending long ids or a new context per device cannot
///   grow memory past the budget.
public final class DeviceStateCache: Sendable {
    public struct Entry: Sendable {
        public var version: Int64
        public var state: DeviceState
    }

    /// What a read that missed holds while it loads from the database.
    public struct Ticket: Sendable {
        fileprivate var shard: Int
        fileprivate var epoch: UInt64
    }

    /// What a shard keeps per device: 24 bytes beside the key (the version, the packed state).
    private struct Slot {
        var version: Int64
        var state: PackedDeviceState
    }

    /// One generation of a shard: its devices, their contexts, and what they cost.
    private struct Generation {
        var slots: [StreamKey: Slot] = [:]
        var contexts = InternTable<DeviceContext>()
        var extras = InternTable<DeviceExtras>()
        /// Heap bytes of keys and contexts (the dictionary's own storage is computed).
        var heapBytes = 0

        var bytes: Int { DeviceStateCache.storageBytes(capacity: slots.capacity) + heapBytes }

        func entry(_ key: StreamKey) -> Entry? {
            slots[key].map { slot in
                Entry(version: slot.version, state: slot.state.state(
                    context: contexts.values[Int(slot.state.context)],
                    extras: slot.state.extras == 0 ? nil : extras.values[Int(slot.state.extras) - 1]))
            }
        }

        mutating func insert(_ key: StreamKey, version: Int64, state: DeviceState) {
            let (context, contextAdded) = contexts.index(of: state.context)
            if contextAdded { heapBytes += DeviceStateCache.contextBytes(state.context) }
            var extrasIndex: UInt32 = 0
            if let value = DeviceExtras(of: state) {
                let (index, added) = extras.index(of: value)
                if added { heapBytes += DeviceStateCache.extrasBytes(value) }
                extrasIndex = index + 1
            }
            if slots.updateValue(
                Slot(version: version, state: PackedDeviceState(state, context: context, extras: extrasIndex)), forKey: key) == nil {
                heapBytes += DeviceStateCache.keyBytes(key)
            }
        }

        @discardableResult
        mutating func remove(_ key: StreamKey) -> Bool {
            guard slots.removeValue(forKey: key) != nil else { return false }
            heapBytes -= DeviceStateCache.keyBytes(key)
            return true
        }
    }

    /// One stripe of the cache with its own lock: gates on many devices rarely contend.
    private final class Shard: Sendable {
        struct Contents {
            var young = Generation()
            var old = Generation()
            var epoch: UInt64 = 0
            /// The versions recent notifications announced, newest half first.
            var floors: [StreamKey: Int64] = [:]
            var oldFloors: [StreamKey: Int64] = [:]

            /// The version the last notifications said the device is at, if one did lately.
            func floor(of key: StreamKey) -> Int64? {
                guard !floors.isEmpty || !oldFloors.isEmpty else { return nil }
                return floors[key] ?? oldFloors[key]
            }

            mutating func noteFloor(_ key: StreamKey, _ version: Int64) {
                let known = floor(of: key)
                if floors.count >= DeviceStateCache.maxFloors / 2 && floors[key] == nil {
                    oldFloors = floors
                    floors = [:]
                }
                floors[key] = max(version, known ?? version)
            }
        }

        let contents = Mutex(Contents())

        func withLock<T>(_ body: (inout Contents) -> T) -> T {
            contents.withLock { body(&$0) }
        }
    }

    /// The default budget: 256 MiB, about a million devices at the measured cost per device.
    public static let defaultByteBudget = 256 << 20
    /// Notified versions a shard remembers (`Shard.Contents.floors`): a bound outside the byte
    /// budget, at most a few hundred kilobytes per shard with the API's longest ids.
    static let maxFloors = 2048

    public let byteBudget: Int
    /// Cached answers are used only while the change notifications are followed.
    public let coherence: CacheCoherence
    private let shards: [Shard]
    /// Resyncs so far (`removeAll`): an append's states are stored only if none came between
    /// the append's start and its answer (`store(_:version:state:resyncs:)`).
    private let resyncs = Atomic<UInt64>(0)
    private let generationBudget: Int

    public init(byteBudget: Int = DeviceStateCache.defaultByteBudget, shardCount: Int = 16, coherence: CacheCoherence) {
        self.byteBudget = max(0, byteBudget)
        self.coherence = coherence
        shards = (0..<max(1, shardCount)).map { _ in Shard() }
        generationBudget = self.byteBudget / shards.count / 2
    }

    private func shard(_ key: StreamKey) -> Int {
        Int(UInt64(bitPattern: Int64(key.hashValue)) % UInt64(shards.count))
    }

    /// The cached entry; nil when absent or while notifications are not being followed. A hit
    /// in the old generation moves to the young one.
    public func entry(_ key: StreamKey) -> Entry? {
        guard coherence.isFollowing else { return nil }
        return shards[shard(key)].withLock { contents in
            if let entry = contents.young.entry(key) { return entry }
            guard let entry = contents.old.entry(key) else { return nil }
            contents.old.remove(key)
            insert(key, version: entry.version, state: entry.state, into: &contents)
            return entry
        }
    }

    /// Taken before loading a missed device from the database; see `fill`.
    public func ticket(_ key: StreamKey) -> Ticket {
        let index = shard(key)
        return Ticket(shard: index, epoch: shards[index].withLock { $0.epoch })
    }

    /// Stores a state loaded from the database, unless an invalidation came since `ticket`
    /// (the load may predate it) or notifications are not being followed.
    public func fill(_ key: StreamKey, ticket: Ticket, version: Int64, state: DeviceState) {
        guard coherence.isFollowing else { return }
        shards[ticket.shard].withLock { contents in
            guard contents.epoch == ticket.epoch else { return }
            storeIfNewer(key, version: version, state: state, in: &contents)
        }
    }

    /// `resyncCount` when an append began, for `store(_:version:state:resyncs:)`.
    public var resyncCount: UInt64 { resyncs.load(ordering: .acquiring) }

    /// Stores a state this process just committed, if it is newer than the cached one, unless
    /// a resync came since the append began (`resyncs`, its `resyncCount` then): while LISTEN
    /// was down another process may have appended to the device, and its notification is lost.
    public func store(_ key: StreamKey, version: Int64, state: DeviceState, resyncs count: UInt64) {
        guard coherence.isFollowing else { return }
        shards[shard(key)].withLock { contents in
            guard resyncs.load(ordering: .acquiring) == count else { return }
            storeIfNewer(key, version: version, state: state, in: &contents)
        }
    }

    private func storeIfNewer(_ key: StreamKey, version: Int64, state: DeviceState, in contents: inout Shard.Contents) {
        if let floor = contents.floor(of: key), version < floor { return }
        if let current = contents.young.slots[key] {
            guard current.version < version else { return }
        } else if let current = contents.old.slots[key] {
            guard current.version < version else { return }
            contents.old.remove(key)
        }
        insert(key, version: version, state: state, into: &contents)
    }

    /// Inserts into the young generation, turning generations over first if the insert would
    /// take the young one past half the shard's budget (including the dictionary's growth).
    private func insert(_ key: StreamKey, version: Int64, state: DeviceState, into contents: inout Shard.Contents) {
        // Read in place: a copy of the generation held across the insert below would make the
        // dictionary copy itself on write.
        let count = contents.young.slots.count
        let capacity = contents.young.slots.capacity
        let grows = count >= capacity && contents.young.slots[key] == nil
        let capacityAfter = grows ? max(1, capacity) * 2 : capacity
        let bytesAfter = Self.storageBytes(capacity: capacityAfter) + contents.young.heapBytes + Self.keyBytes(key)
            + Self.sharedBytes(of: state)
        if bytesAfter > generationBudget {
            contents.old = contents.young
            contents.young = Generation()
            if Self.storageBytes(capacity: 1) + Self.keyBytes(key) + Self.sharedBytes(of: state) > generationBudget {
                return  // a budget too small for even one entry caches nothing
            }
        }
        contents.young.insert(key, version: version, state: state)
    }

    /// Drops an entry older than `version` (another process moved the stream to it), makes any
    /// fill of the shard that is in flight void, and refuses a store of an older state for a
    /// while (the floor).
    public func removeIfOlder(_ key: StreamKey, than version: Int64) {
        shards[shard(key)].withLock { contents in
            contents.epoch &+= 1
            if let current = contents.young.slots[key], current.version < version { contents.young.remove(key) }
            if let current = contents.old.slots[key], current.version < version { contents.old.remove(key) }
            contents.noteFloor(key, version)
        }
    }

    /// Empties the cache and voids every fill in flight (a resync).
    public func removeAll() {
        resyncs.add(1, ordering: .releasing)
        for shard in shards {
            shard.withLock { contents in
                contents.young = Generation()
                contents.old = Generation()
                contents.epoch &+= 1
            }
        }
    }

    public func remove(_ key: StreamKey) {
        shards[shard(key)].withLock { contents in
            contents.epoch &+= 1
            contents.young.remove(key)
            contents.old.remove(key)
        }
    }

    public var count: Int {
        shards.reduce(0) { total, shard in total + shard.withLock { $0.young.slots.count + $0.old.slots.count } }
    }

    /// Bytes held by the cache as it counts them (at most `byteBudget`).
    public var bytes: Int {
        shards.reduce(0) { total, shard in total + shard.withLock { $0.young.bytes + $0.old.bytes } }
    }

    // MARK: - Costs

    /// A native dictionary of `capacity` keeps `capacity / 0.75` buckets rounded up to a power
    /// of two, each with a key (48 bytes) and a slot (24), plus one bit of occupancy.
    static func storageBytes(capacity: Int) -> Int {
        guard capacity > 0 else { return 0 }
        var buckets = 1
        while buckets * 3 < capacity * 4 { buckets <<= 1 }
        return buckets * (MemoryLayout<StreamKey>.stride + MemoryLayout<Slot>.stride) + buckets / 8 + 64
    }

    /// The heap bytes of a key: its two strings when they are too long to be stored inline.
    static func keyBytes(_ key: StreamKey) -> Int {
        heapBytes(key.userID) + heapBytes(key.deviceID)
    }

    /// A string of more than 15 UTF-8 bytes is a heap object: a 32-byte header and the bytes,
    /// rounded up by malloc.
    static func heapBytes(_ text: String?) -> Int {
        guard let count = text?.utf8.count, count > 15 else { return 0 }
        return (32 + count + 1 + 16 + 15) / 16 * 16
    }

    /// A context in its table: the array's copy and the index's copy with its bucket, at their
    /// storage's capacity (an array and a hash table grow by doubling: up to about three slots
    /// per entry), and its strings and sets on the heap.
    static func contextBytes(_ context: DeviceContext) -> Int {
        func setBytes(_ set: Set<String>?) -> Int {
            guard let set else { return 0 }
            return 64 + set.count * 32 + set.reduce(0) { $0 + heapBytes($1) }
        }
        return 4 * MemoryLayout<DeviceContext>.stride + 16 + heapBytes(context.appVersion)
            + setBytes(context.usageDescriptions) + setBytes(context.temporaryUsagePurposeKeys)
            + (context.declaredPermissions == nil ? 0 : 64)
    }

    /// Extras in their table, likewise, with the sessions' dictionary and the pending request.
    static func extrasBytes(_ extras: DeviceExtras) -> Int {
        let sessions = extras.sessionState.sessions
        let sessionBytes = sessions.isEmpty ? 0 : 64 + sessions.reduce(0) { total, entry in
            total + 32 + MemoryLayout<ServiceSession>.stride + heapBytes(entry.key) + heapBytes(entry.value.fullAccuracyPurposeKey)
        }
        return 4 * MemoryLayout<DeviceExtras>.stride + 2 * sessionBytes + (extras.android.pendingRequest.isEmpty ? 0 : 2 * 64)
    }

    /// The most a state's context and extras can add to a generation (when both are new).
    static func sharedBytes(of state: DeviceState) -> Int {
        contextBytes(state.context) + (DeviceExtras(of: state).map(extrasBytes) ?? 0)
    }
}
