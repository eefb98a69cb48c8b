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

/// One pass over an app's distinct states and their devices (`device_counts`, a row per state
/// and lane), through a cursor read a page at a time: memory holds one page and what the caller
/// keeps, never every state, so a preview or the dashboard's coverage costs time and memory
/// linear in the app's states whatever they hold (SPEC §15).
///
/// A state comes with its decision form (`state_forms`, `decision_forms`; migration 024) and
/// its devices' app version, not its JSON: states that differ in what no decision reads share
/// a form, so a million planted states are a few forms to decode (each once per process while
/// the cache has room) and a million short rows. A state whose form the writer has not written
/// yet (`DecisionFormWriter`) comes whole and is reduced here.
///
/// The lanes of a state are not summed in the database: a decision is the same for each of a
/// state's rows, so the caller adds each row's count (a lane's may be negative, their sum never
/// is), and the database reads the app's rows, which carry their state's form id, in one pass
/// with no join, sort or aggregate that would spill to disk at a million states. The flag is checked between pages:
/// a request whose client left stops there.
struct StateKindScan {
    /// One row of a state's counts: the devices it adds (a lane's count, which can be negative
    /// or zero; the state's lanes sum to its devices), their app version, the state's decision
    /// form (nil when this build cannot read it: its devices count, in no decision) with the
    /// form's id (nil for a state reduced here), and `jsonb_hash_extended` of the state's JSON,
    /// which a device row in that state hashes to as well.
    struct Kind {
        var devices: Int64
        var appVersion: String?
        /// The form's id in `decision_forms` (0 for a state this build cannot read); nil for a
        /// state that came whole (`reduced` holds its form).
        var formID: Int64?
        var contentHash: Int64
        /// The form of a state that came whole, reduced here.
        var reduced: DeviceState?
    }

    /// States read at a time.
    static let pageSize = 1000

    let appID: UUID
    let stateKinds: StateKindCache
    let cancellation: CancellationFlag

    /// Calls `body` for each of the app's states with devices, on `connection`, inside the
    /// caller's transaction.
    func forEach(on connection: PostgresConnection, _ body: (Kind) throws -> Void) throws {
        // The count rows carry their state's form (the writer copies it there): one pass over
        // the app's rows. A row without it looks it up (the CASE's subqueries run only then),
        // and a state without a form yet is read whole. Compiling the query (JIT) costs more
        // than it saves.
        try connection.execute("SET LOCAL jit = off")
        try connection.query(
            """
            DECLARE locgate_state_kinds NO SCROLL CURSOR FOR
            SELECT c.devices, c.app_version,
                CASE WHEN c.form_id IS NULL THEN (SELECT s.form_id FROM state_forms s WHERE s.state_id = c.state_id) ELSE c.form_id END,
                CASE WHEN c.form_id IS NULL THEN (SELECT s.content_hash FROM state_forms s WHERE s.state_id = c.state_id) ELSE c.content_hash END,
                CASE WHEN c.form_id IS NULL THEN (
                    SELECT k.state::text FROM device_state_kinds k LEFT JOIN state_forms s ON s.state_id = k.state_id
                    WHERE k.state_id = c.state_id AND s.form_id IS NULL) END,
                CASE WHEN c.form_id IS NULL THEN (
                    SELECT jsonb_hash_extended(k.state, 0) FROM device_state_kinds k LEFT JOIN state_forms s ON s.state_id = k.state_id
                    WHERE k.state_id = c.state_id AND s.form_id IS NULL) END
            FROM device_counts c
            WHERE c.app_id = \(appID) AND c.devices <> 0
            """)
        while true {
            try cancellation.check()
            var kinds: [Kind] = []
            kinds.reserveCapacity(Self.pageSize)
            var missing: Set<Int64> = []
            // Read in place: a million rows copied into `PostgresRows` cost more than the pass.
            try connection.forEachRow("FETCH \(unescaped: String(Self.pageSize)) FROM locgate_state_kinds") { row in
                var kind = Kind(
                    devices: try row.int64(0) ?? 0, appVersion: row.string(1), formID: try row.int64(2),
                    contentHash: try row.int64(3) ?? row.int64(5) ?? 0, reduced: nil)
                if let formID = kind.formID {
                    if formID != 0 && stateKinds.state(formID) == nil { missing.insert(formID) }
                } else if let text = row.string(4), let state = try? JSONText.state(text) {
                    kind.reduced = state.decisionForm
                    kind.appVersion = state.context.appVersion
                }
                kinds.append(kind)
            }
            if !missing.isEmpty {
                let forms = try connection.query(
                    "SELECT form_id, form::text FROM decision_forms WHERE form_id = ANY(\(PostgresArray(missing.sorted())))")
                for form in forms {
                    let text: String = try form.decode(1)
                    if let state = try? JSONText.state(text) { stateKinds.insert(try form.decode(0), state, jsonBytes: text.utf8.count) }
                }
            }
            for kind in kinds {
                try body(kind)
            }
            if kinds.count < Self.pageSize { break }
        }
        try connection.query("CLOSE locgate_state_kinds")
    }

    /// The form of `kind`: reduced here, or from the cache (read again when the cache let go of
    /// it, which happens only when a page's forms outweigh its budget); nil when this build
    /// cannot read the state.
    func form(of kind: Kind, on connection: PostgresConnection) -> DeviceState? {
        if let reduced = kind.reduced { return reduced }
        guard let formID = kind.formID, formID != 0 else { return nil }
        if let cached = stateKinds.state(formID) { return cached }
        guard let text = try? connection.query("SELECT form::text FROM decision_forms WHERE form_id = \(formID)").first?.decode(0, as: String.self) else {
            return nil
        }
        return try? JSONText.state(text)
    }
}

/// Decisions over decision forms for a fixed list of features, kept per form and per the
/// floors (`minAppVersion`) a device's app version meets: a form decides the same for every
/// device that meets the same floors (`DeviceState.decideForm`), so a pass decides each such
/// pair once. Bounded: emptied when it holds `maxEntries`.
struct FormDecisions<Value> {
    struct Key: Hashable {
        var formID: Int64
        var meets: UInt64
        var moreMeets: [UInt64]
    }

    let features: [Feature]
    /// The features with a floor, by index.
    private let floored: [Int]
    private var memo: [Key: Value] = [:]
    let maxEntries: Int
    /// What a form's decisions (one per feature, by index) are kept as.
    let summarize: (_ form: DeviceState, _ decide: (Int) -> GateDecision) -> Value

    init(features: [Feature], maxEntries: Int = 65_536, summarize: @escaping (_ form: DeviceState, _ decide: (Int) -> GateDecision) -> Value) {
        self.features = features
        self.floored = features.indices.filter { features[$0].minAppVersion != nil }
        self.maxEntries = maxEntries
        self.summarize = summarize
    }

    /// The value for a kind's devices; nil when its state cannot be read. `form` gives the
    /// kind's form, asked for only when its decisions are not known yet.
    mutating func value(for kind: StateKindScan.Kind, form: (StateKindScan.Kind) -> DeviceState?) -> Value? {
        if kind.reduced == nil && (kind.formID ?? 0) == 0 { return nil }
        var meets: UInt64 = 0
        var moreMeets: [UInt64] = []
        for (position, index) in floored.enumerated() where features[index].minAppVersion?.isMet(by: kind.appVersion) == true {
            if position < 64 {
                meets |= 1 << UInt64(position)
            } else {
                let word = position / 64 - 1
                while moreMeets.count <= word { moreMeets.append(0) }
                moreMeets[word] |= 1 << UInt64(position % 64)
            }
        }
        let key = Key(formID: kind.formID ?? 0, meets: meets, moreMeets: moreMeets)
        // A state reduced here has no id to keep its decisions under.
        if kind.formID != nil, let known = memo[key] { return known }
        guard let form = form(kind) else { return nil }
        var met = Array(repeating: false, count: features.count)
        for (position, index) in floored.enumerated() {
            let word = position < 64 ? meets : moreMeets[safe: position / 64 - 1] ?? 0
            met[index] = word & (1 << UInt64(position % 64)) != 0
        }
        let features = self.features
        let computed = summarize(form) { index in form.decideForm(features[index], meetsAppVersionFloor: met[index], version: 1) }
        guard kind.formID != nil else { return computed }
        if memo.count >= maxEntries { memo = [:] }
        memo[key] = computed
        return computed
    }
}

extension Array {
    fileprivate subscript(safe index: Int) -> Element? {
        indices.contains(index) ? self[index] : nil
    }
}
