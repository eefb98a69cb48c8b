import Foundation
import LocationAuthorization
import PostgresClient
import Synchronization

/// Decoded states of `device_state_kinds` by id. An id is a hash of the state's content, so an
/// entry never goes stale and needs no invalidation; the cache only bounds its size, in bytes
/// (each entry weighed as twice its stored JSON, which the decoded state's strings and sets
/// follow, and a fixed overhead), so that
/// whatever states devices report (large ones within SPEC §1's limits, planted by an ingest
/// key) it holds at most `byteBudget`. It is emptied, and its storage released, when full:
/// refilling costs one indexed read of the missing ids.
final class StateKindCache: Sendable {
    private struct Entries {
        var states: [Int64: DeviceState] = [:]
        var bytes = 0
    }

    private let entries = Mutex(Entries())
    let byteBudget: Int
    /// A state whose JSON is larger than this is never cached.
    let maxEntryBytes: Int
    /// What an entry costs beyond its JSON's bytes (the dictionary's slot, the state's fixed fields).
    static let entryOverhead = 400

    init(byteBudget: Int = 16 << 20, maxEntryBytes: Int = 16 << 10) {
        self.byteBudget = byteBudget
        self.maxEntryBytes = maxEntryBytes
    }

    func state(_ id: Int64) -> DeviceState? {
        entries.withLock { $0.states[id] }
    }

    /// Keeps `state`, whose stored JSON is `jsonBytes` long.
    func insert(_ id: Int64, _ state: DeviceState, jsonBytes: Int) {
        guard jsonBytes <= maxEntryBytes else { return }
        // A decoded state holds its strings and sets on the heap, about twice its JSON.
        let cost = 2 * jsonBytes + Self.entryOverhead
        entries.withLock { entries in
            guard entries.states[id] == nil else { return }
            if entries.bytes + cost > byteBudget { entries = Entries() }
            entries.states[id] = state
            entries.bytes += cost
        }
    }

    /// Bytes held now, as weighed.
    var bytes: Int { entries.withLock { $0.bytes } }
}

/// One pass over an app's distinct states and their devices (`device_counts` summed over its
/// lanes, each joined to its state in `device_state_kinds`), through a cursor read a page at a
/// time: memory holds one page and what the caller keeps, never every state, so a preview or
/// the dashboard's coverage costs time and memory linear in the app's states whatever they hold
/// (SPEC §15). Each state is decoded once per process while the cache has room for it. The
/// flag is checked between pages: a request whose client left stops there.
struct StateKindScan {
    /// One distinct state: its id, the devices in it, the state (nil when this build cannot
    /// read it: its devices count, in no decision) and `jsonb_hash_extended` of its JSON, which
    /// a device row in that state hashes to as well.
    struct Kind {
        var id: Int64
        var devices: Int64
        var state: DeviceState?
        var contentHash: Int64
    }

    /// States read at a time.
    static let pageSize = 1000

    let appID: UUID
    let stateKinds: StateKindCache
    let cancellation: CancellationFlag

    /// Calls `body` for each of the app's states with devices, on `connection`, inside the
    /// caller's transaction.
    func forEach(on connection: PostgresConnection, _ body: (Kind) throws -> Void) throws {
        try connection.query(
            """
            DECLARE locgate_state_kinds NO SCROLL CURSOR FOR
            SELECT c.state_id, c.devices, k.state::text, coalesce(jsonb_hash_extended(k.state, 0), 0)
            FROM (SELECT state_id, sum(devices)::bigint AS devices FROM device_counts
                  WHERE app_id = \(appID) GROUP BY 1 HAVING sum(devices) > 0) c
            LEFT JOIN device_state_kinds k ON k.state_id = c.state_id
            """)
        while true {
            try cancellation.check()
            let rows = try connection.query("FETCH \(unescaped: String(Self.pageSize)) FROM locgate_state_kinds")
            for row in rows {
                let id: Int64 = try row.decode(0)
                var state = stateKinds.state(id)
                if state == nil, let text = try row.decodeIfPresent(2, as: String.self), let decoded = try? JSONText.state(text) {
                    stateKinds.insert(id, decoded, jsonBytes: text.utf8.count)
                    state = decoded
                }
                try body(Kind(id: id, devices: try row.decode(1), state: state, contentHash: try row.decode(3)))
            }
            if rows.count < Self.pageSize { break }
        }
        try connection.query("CLOSE locgate_state_kinds")
    }
}
