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
public final class DeviceStateCache: Sendable {
    public struct Entry: Sendable {
        public var version: Int64
        public var state: DeviceState
    }

    /// One stripe of the cache with its own lock: gates on many devices rarely contend.
    private final class Shard: Sendable {
        let entries = Mutex<[StreamKey: Entry]>([:])

        func withLock<T>(_ body: (inout [StreamKey: Entry]) -> T) -> T {
            entries.withLock { body(&$0) }
        }
    }

    private let shards: [Shard]

    public init(shardCount: Int = 16) {
        shards = (0..<max(1, shardCount)).map { _ in Shard() }
    }

    private func shard(_ key: StreamKey) -> Int {
        Int(UInt64(bitPattern: Int64(key.hashValue)) % UInt64(shards.count))
    }

    public func entry(_ key: StreamKey) -> Entry? {
        shards[shard(key)].withLock { $0[key] }
    }

    /// Identical key sets are shared, not copied per device: most devices of an app report the
    /// same Info.plist keys, and a set is the largest part of a cached state.
    private let internedKeySets = Mutex<Set<Set<String>>>([])

    private func intern(_ keys: Set<String>?) -> Set<String>? {
        guard let keys else { return nil }
        return internedKeySets.withLock { sets in
            // firstIndex(of:) hashes: the element returned is the stored one, sharing its storage.
            if let index = sets.firstIndex(of: keys) { return sets[index] }
            if sets.count < 10_000 { sets.insert(keys) }
            return keys
        }
    }

    /// Stores a state if it is newer than the cached one.
    public func store(_ key: StreamKey, version: Int64, state: DeviceState) {
        var state = state
        state.context.usageDescriptions = intern(state.context.usageDescriptions)
        state.context.temporaryUsagePurposeKeys = intern(state.context.temporaryUsagePurposeKeys)
        shards[shard(key)].withLock { entries in
            if let current = entries[key], current.version >= version { return }
            entries[key] = Entry(version: version, state: state)
        }
    }

    /// Drops an entry older than `version` (another process moved the stream).
    public func removeIfOlder(_ key: StreamKey, than version: Int64) {
        shards[shard(key)].withLock { entries in
            if let current = entries[key], current.version < version { entries[key] = nil }
        }
    }

    public func removeAll() {
        for shard in shards { shard.withLock { $0 = [:] } }
    }

    public func remove(_ key: StreamKey) {
        shards[shard(key)].withLock { _ = $0.removeValue(forKey: key) }
    }

    public var count: Int {
        shards.reduce(0) { total, shard in total + shard.withLock { $0.count } }
    }
}
