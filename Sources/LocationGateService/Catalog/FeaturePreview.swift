import Foundation
import LocationAuthorization
import PostgresClient

/// What putting a feature would change for an app's devices now (SPEC §15 "Preview"): every
/// device whose decision (on or off, and why) would differ, grouped by the pair of decisions,
/// largest group first, each with its devices by platform and a few of them by name.
///
/// The JSON is `{"devices", "changes": [{"from": {"enabled", "reason"}, "to": {"enabled",
/// "reason"}, "devices", "byPlatform": {PLATFORM: n}, "sample": [{"userId", "deviceId"}]}]}`.
public struct FeaturePreview: Sendable, Hashable, Codable {
    /// A decision as the preview compares it: on or off, and why.
    public struct Outcome: Sendable, Hashable, Codable {
        public var enabled: Bool
        /// A `GateReason`, or `unknownFeature`.
        public var reason: String

        public init(enabled: Bool, reason: String) {
            self.enabled = enabled
            self.reason = reason
        }

        public init(_ decision: GateDecision) {
            self.init(enabled: decision.enabled, reason: decision.reason.rawValue)
        }

        /// What a device has of a key the catalog does not hold: a PUT of a new key changes
        /// every device from this.
        public static let unknownFeature = Outcome(enabled: false, reason: "unknownFeature")
    }

    /// One device by name.
    public struct Device: Sendable, Hashable, Codable {
        public var userId: String
        public var deviceId: String

        public init(userId: String, deviceId: String) {
            self.userId = userId
            self.deviceId = deviceId
        }
    }

    /// The devices that would go from one decision to another.
    public struct Change: Sendable, Hashable, Codable {
        public var from: Outcome
        public var to: Outcome
        public var devices: Int64
        /// Devices by platform, by the platform names of `contextReported` (a device that never
        /// reported one is iOS, as the gate reads it).
        public var byPlatform: [String: Int64]
        /// At most `FeaturePreview.sampleSize` of them, by user and device id.
        public var sample: [Device]

        public init(from: Outcome, to: Outcome, devices: Int64, byPlatform: [String: Int64], sample: [Device]) {
            self.from = from
            self.to = to
            self.devices = devices
            self.byPlatform = byPlatform
            self.sample = sample
        }
    }

    /// Every device of the app.
    public var devices: Int64
    /// One per pair of decisions that differ, the most devices first.
    public var changes: [Change]

    public init(devices: Int64, changes: [Change]) {
        self.devices = devices
        self.changes = changes
    }

    /// Devices named per change, at most.
    public static let sampleSize = 20
}

extension CatalogCapability {
    /// What `PUT /v1/features/{key}` with `feature` would change for the app's devices now,
    /// changing nothing (SPEC §15). Against the catalog's feature of the same key, or, for a
    /// new key, against "no feature" (`FeaturePreview.Outcome.unknownFeature`). A new key the
    /// catalog has no room for is refused as PUT would refuse it.
    ///
    /// No device is loaded: the devices of an app are in a few distinct states, which
    /// `device_counts` counts (SPEC §8's feature coverage reads them too). A cursor passes over
    /// them with their decision forms (`StateKindScan`); each form is decided once per floor met
    /// with the current and with the proposed feature (`FormDecisions`), and the counts of the
    /// states whose decision changes are added up per pair of decisions; then a few devices of each pair are named by bounded reads of
    /// `device_states` (`FeaturePreviewSampler`). Memory holds a page of states, the pairs and
    /// their samples, whatever the app's size or its devices' states; every read is in one
    /// snapshot, so the samples belong to the counts.
    ///
    /// A preview is costly work (`CostlyWork`): an app runs at most two at once (429 beyond),
    /// within the costly requests' share of the pool. `cancellation` stops it between pages when
    /// its client has gone, ending its transaction.
    public func previewFeature(
        appID: UUID, feature: Feature, cancellation: CancellationFlag = CancellationFlag()
    ) async throws(ServiceError) -> FeaturePreview {
        let catalogFeatures = try await features.catalog(appID)
        let current = catalogFeatures.first { $0.key == feature.key }
        if current == nil && catalogFeatures.count >= FeatureCatalog.maxFeatures {
            throw ServiceError(.validationFailed, "the catalog holds at most \(FeatureCatalog.maxFeatures) features; delete one first")
        }
        let stateKinds = self.stateKinds
        let reads = self.reads
        return try await database {
            try await costly.run(.preview, appID: appID) {
                try await withTaskCancellationHandler {
                    try await reads.caughtUp().transaction { connection in
                        try FeaturePreviewSampler(
                            appID: appID, current: current, proposed: feature, stateKinds: stateKinds, cancellation: cancellation
                        ).preview(on: connection)
                    }
                } onCancel: {
                    cancellation.cancel()
                }
            }
        }
    }
}

/// The preview's reads, in one read-only snapshot on one connection.
///
/// 1. The distinct states of the app and their devices, a page at a time, with their decision
///    forms (`StateKindScan`).
/// 2. Each form decided with the current and the proposed feature, once per floor the devices'
///    app versions meet (`FormDecisions`); the states whose outcome differs are grouped by
///    (from, to), with their devices, platforms and content hashes.
/// 3. The samples, from `device_states` by the states' identity: a state's row in
///    `device_state_kinds` and a device's row in `device_states` hold the same jsonb, so
///    `jsonb_hash_extended` of both is equal. The devices are found by the sampled states' app
///    versions (`device_states_app_version`), and their `status` is compared before the hash
///    (both columns are written from the same state), so that the hash is computed only for
///    rows that may match.
///    A pair looks only among the devices of its first states (`sampleReach`), and the pairs
///    share one cursor over those states' devices, read 1,000 rows at a time and closed as soon
///    as each pair has its samples (or all its devices, when it has fewer): at most one pass
///    over the app's rows, streaming only the sampled states' devices.
///
/// Groups live in an array indexed by their pair and are changed in place: a group's lists
/// are never copied as they grow, so the pass is linear in the states.
struct FeaturePreviewSampler {
    let appID: UUID
    let current: Feature?
    let proposed: Feature
    let stateKinds: StateKindCache
    let cancellation: CancellationFlag

    /// Rows read from the cursor at a time.
    static let fetchSize = 1000
    /// The prefilter on `app_version` is left out beyond this many versions, all pairs
    /// together (the sampled states bound the list: `maxSampledStates` a pair). With it, the
    /// samples are read through `device_states_app_version`, only the devices of those
    /// versions; without it, every device of the app.
    static let maxPrefilterVersions = 50_000
    /// A pair's samples are looked for among the devices of its first states, up to this many
    /// devices (ten times the samples) or `maxSampledStates` states.
    static let sampleReach: Int64 = 10 * Int64(FeaturePreview.sampleSize)
    static let maxSampledStates = 2000

    /// A pair of outcomes, as groups are indexed.
    struct Pair: Hashable {
        var from: FeaturePreview.Outcome
        var to: FeaturePreview.Outcome
    }

    /// The devices of one pair of outcomes.
    struct Group {
        var from: FeaturePreview.Outcome
        var to: FeaturePreview.Outcome
        var devices: Int64 = 0
        var byPlatform: [String: Int64] = [:]
        /// The content hashes of the states its samples are taken from (what their devices' rows
        /// hash to): the first ones, up to `sampleReach` devices.
        var hashes: [Int64] = []
        /// The devices of those states.
        var sampledDevices: Int64 = 0
        var statuses: Set<String> = []
        /// `app_version` as the prefilter compares it: "" for none (an `appVersion` is never
        /// empty); nil once there are more than `maxPrefilterVersions`.
        var appVersions: Set<String>? = []
        var sample: [FeaturePreview.Device] = []

        /// The samples this group can have: 20, or all its devices when it has fewer.
        var wanted: Int { Int(min(Int64(FeaturePreview.sampleSize), devices)) }

        mutating func add(_ kind: StateKindScan.Kind, _ changed: Changed) {
            devices += kind.devices
            byPlatform[changed.platform, default: 0] += kind.devices
            // Samples come from the first states that hold enough devices (a few times the
            // samples, in case some of a state's devices have left it): the sampling reads and
            // the memory stay small however many states the pair has.
            guard kind.devices > 0, sampledDevices < FeaturePreviewSampler.sampleReach, hashes.count < FeaturePreviewSampler.maxSampledStates else { return }
            sampledDevices += kind.devices
            hashes.append(kind.contentHash)
            statuses.insert(changed.status)
            if appVersions != nil {
                appVersions?.insert(kind.appVersion ?? "")
                if let count = appVersions?.count, count > FeaturePreviewSampler.maxPrefilterVersions { appVersions = nil }
            }
        }
    }

    /// What a form's decisions are kept as: the pair, when the decision changes, and what a
    /// group counts of its devices.
    struct Changed {
        var pair: Pair?
        var platform: String
        var status: String
    }

    func preview(on connection: PostgresConnection) throws -> FeaturePreview {
        // The counts and the samples from the same snapshot.
        try connection.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        var total: Int64 = 0
        var groups: [Group] = []
        var index: [Pair: Int] = [:]
        // Each form is decided once per floor met, with the current feature (or none) and the proposed one.
        let features = (current.map { [$0] } ?? []) + [proposed]
        var decisions = FormDecisions<Changed>(features: features) { form, decide in
            let to = FeaturePreview.Outcome(decide(features.count - 1))
            let from = features.count == 2 ? FeaturePreview.Outcome(decide(0)) : .unknownFeature
            return Changed(
                pair: from == to ? nil : Pair(from: from, to: to),
                platform: form.context.effectivePlatform.rawValue, status: form.status.rawValue)
        }
        let scan = StateKindScan(appID: appID, stateKinds: stateKinds, cancellation: cancellation)
        try scan.forEach(on: connection) { kind in
            total += kind.devices
            guard let changed = decisions.value(for: kind, form: { scan.form(of: $0, on: connection) }), let pair = changed.pair else { return }
            let position: Int
            if let found = index[pair] {
                position = found
            } else {
                position = groups.count
                index[pair] = position
                groups.append(Group(from: pair.from, to: pair.to))
            }
            groups[position].add(kind, changed)
        }
        // A state's lanes come apart (`StateKindScan`): a pair whose rows cancel out has no devices.
        groups.removeAll { $0.devices <= 0 }
        for index in groups.indices { groups[index].byPlatform = groups[index].byPlatform.filter { $0.value != 0 } }
        groups.sort { left, right in
            if left.devices != right.devices { return left.devices > right.devices }
            if left.from.reason != right.from.reason { return left.from.reason < right.from.reason }
            if left.to.reason != right.to.reason { return left.to.reason < right.to.reason }
            return !left.from.enabled && right.from.enabled
        }
        try sample(&groups, on: connection)
        return FeaturePreview(
            devices: total,
            changes: groups.map { group in
                FeaturePreview.Change(
                    from: group.from, to: group.to, devices: group.devices, byPlatform: group.byPlatform,
                    sample: group.sample.sorted { ($0.userId, $0.deviceId) < ($1.userId, $1.deviceId) })
            })
    }

    /// Fills each group's `sample`.
    func sample(_ groups: inout [Group], on connection: PostgresConnection) throws {
        guard !groups.isEmpty else { return }
        // Every pair samples the devices of its first states only (`sampleReach`), so one
        // cursor serves them all: one pass at most, closed as soon as each has its samples.
        let rare = Array(groups.indices)
        var groupOfHash: [Int64: Int] = [:]
        var filter = Filter()
        for index in rare {
            filter.add(groups[index])
            for hash in groups[index].hashes { groupOfHash[hash] = index }
        }
        var incomplete = rare.filter { groups[$0].sample.count < groups[$0].wanted }.count
        /// Reads the cursor's rows into the groups until each has its samples; closes it.
        func drain() throws {
            while incomplete > 0 {
                try cancellation.check()
                let rows = try connection.query("FETCH \(unescaped: String(Self.fetchSize)) FROM locgate_preview_sample")
                for row in rows {
                    guard let index = groupOfHash[try row.decode(0, as: Int64.self)], groups[index].sample.count < groups[index].wanted else { continue }
                    groups[index].sample.append(FeaturePreview.Device(userId: try row.decode(1), deviceId: try row.decode(2)))
                    if groups[index].sample.count == groups[index].wanted { incomplete -= 1 }
                }
                if rows.count < Self.fetchSize { break }
            }
            try connection.query("CLOSE locgate_preview_sample")
        }
        guard let versions = filter.appVersions else {
            try connection.query(
                """
                DECLARE locgate_preview_sample NO SCROLL CURSOR FOR
                SELECT jsonb_hash_extended(state, 0), user_id, device_id FROM device_states
                WHERE app_id = \(appID) AND CASE
                    WHEN status = ANY(\(filter.statuses)) THEN jsonb_hash_extended(state, 0) = ANY(\(filter.hashes)) ELSE false END
                """)
            try drain()
            return
        }
        // The devices of those versions, a version at a time through `device_states_app_version`
        // (migration 025): the column keeps no statistics, so the planner, asked for a long list
        // at once, guessed that it matched every row and read the app's rows through the primary
        // key (3.9 s at a million planted devices); asked for one version of one app (a lateral
        // subquery kept apart by `OFFSET 0`), it takes the index (0.2 s for 2,000 versions).
        // The plan is made at DECLARE.
        try connection.execute("SET LOCAL enable_seqscan = off")
        try connection.query(
            """
            DECLARE locgate_preview_sample NO SCROLL CURSOR FOR
            SELECT d.hash, d.user_id, d.device_id FROM unnest(\(versions)::text[]) AS v (version)
            CROSS JOIN LATERAL (
                SELECT jsonb_hash_extended(state, 0) AS hash, user_id, device_id FROM device_states
                WHERE app_version = v.version AND app_id = \(appID)
                  AND CASE WHEN status = ANY(\(filter.statuses)) THEN jsonb_hash_extended(state, 0) = ANY(\(filter.hashes)) ELSE false END
                OFFSET 0
            ) AS d
            """)
        try connection.execute("SET LOCAL enable_seqscan = on")
        try drain()
        // Devices that reported no version are not in the index: a pass over the app's rows,
        // only when a sampled state has none and its group still lacks samples.
        guard incomplete > 0, filter.includesNoVersion else { return }
        try connection.query(
            """
            DECLARE locgate_preview_sample NO SCROLL CURSOR FOR
            SELECT jsonb_hash_extended(state, 0), user_id, device_id FROM device_states
            WHERE app_id = \(appID) AND app_version IS NULL
              AND CASE WHEN status = ANY(\(filter.statuses)) THEN jsonb_hash_extended(state, 0) = ANY(\(filter.hashes)) ELSE false END
            """)
        try drain()
    }

    /// Which rows of `device_states` may hold a group's states: their statuses and app versions
    /// (cheap column comparisons), and the states' content hashes.
    struct Filter {
        private var statusSet: Set<String> = []
        /// Nil once some group has too many versions to compare with.
        private var versionSet: Set<String>? = []
        private var hashList: [Int64] = []

        init() {}

        init(_ group: Group) {
            add(group)
        }

        mutating func add(_ group: Group) {
            statusSet.formUnion(group.statuses)
            if let versions = group.appVersions, versionSet != nil {
                versionSet?.formUnion(versions)
            } else {
                versionSet = nil
            }
            hashList += group.hashes
        }

        var statuses: PostgresArray { PostgresArray(statusSet.sorted()) }
        /// The app versions of the sampled states (a device without one is not among them; see
        /// `includesNoVersion`); nil (no prefilter on the version) when there are many.
        var appVersions: PostgresArray? {
            guard let versionSet, versionSet.count <= FeaturePreviewSampler.maxPrefilterVersions else { return nil }
            return PostgresArray(versionSet.filter { !$0.isEmpty }.sorted())
        }
        /// Whether some sampled state's devices reported no app version.
        var includesNoVersion: Bool { versionSet?.contains("") ?? true }
        var hashes: PostgresArray { PostgresArray(hashList) }
    }
}
