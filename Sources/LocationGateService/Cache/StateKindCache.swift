import LocationAuthorization
import Synchronization

/// Decoded states of `device_state_kinds` by id. An id is a hash of the state's content, so an
/// entry never goes stale and needs no invalidation; the cache only bounds its size (emptied
/// when full: refilling costs one indexed read of the missing ids).
final class StateKindCache: Sendable {
    private let states = Mutex<[Int64: DeviceState]>([:])
    let capacity: Int

    init(capacity: Int = 50_000) {
        self.capacity = capacity
    }

    func state(_ id: Int64) -> DeviceState? {
        states.withLock { $0[id] }
    }

    func insert(_ id: Int64, _ state: DeviceState) {
        states.withLock { states in
            if states.count >= capacity { states.removeAll(keepingCapacity: true) }
            states[id] = state
        }
    }
}
