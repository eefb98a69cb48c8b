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

    /// What a shard keeps per device: 16 bytes beside the key.
    private struct Slot {
        var version: Int64
        var state: PackedDeviceState
    }

    /// One stripe of the cache with its own lock: gates on many devices rarely contend. Each
    /// shard interns its own contexts, under the same lock, so a read takes one lock.
    private final class Shard: Sendable {
        struct Contents {
            var slots: [StreamKey: Slot] = [:]
            var contexts = ContextTable()
        }

        let contents = Mutex(Contents())

        func withLock<T>(_ body: (inout Contents) -> T) -> T {
            contents.withLock { body(&$0) }
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
        shards[shard(key)].withLock { contents in
            contents.slots[key].map { slot in
                Entry(version: slot.version, state: slot.state.state(context: contents.contexts.contexts[Int(slot.state.context)]))
            }
        }
    }

    /// Stores a state if it is newer than the cached one.
    public func store(_ key: StreamKey, version: Int64, state: DeviceState) {
        shards[shard(key)].withLock { contents in
            if let current = contents.slots[key], current.version >= version { return }
            let context = contents.contexts.index(of: state.context)
            contents.slots[key] = Slot(version: version, state: PackedDeviceState(state, context: context))
        }
    }

    /// Drops an entry older than `version` (another process moved the stream).
    public func removeIfOlder(_ key: StreamKey, than version: Int64) {
        shards[shard(key)].withLock { entries in
            if let current = entries.slots[key], current.version < version { entries.slots[key] = nil }
        }
    }

    public func removeAll() {
        for shard in shards { shard.withLock { $0 = Shard.Contents() } }
    }

    public func remove(_ key: StreamKey) {
        shards[shard(key)].withLock { _ = $0.slots.removeValue(forKey: key) }
    }

    public var count: Int {
        shards.reduce(0) { total, shard in total + shard.withLock { $0.slots.count } }
    }
}
