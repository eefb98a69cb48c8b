import EventLog
import Foundation
import LocationAuthorization
import LocationGateJSON
import PostgresClient
import Synchronization

/// Each app's features (SPEC §4), from the `features` table, cached in memory. Changes notify
/// `locgate_features` with the app id, and every process drops that app's cached catalog.
///
/// An app's experiments (SPEC §16) are part of its catalog for this purpose: they share the
/// catalog's lock (a key is a feature's or an experiment's, never both: `keyInUse`) and its
/// channel, so that an experiment's change reaches every server and push stream as a feature's
/// does. Dropping an app's catalog here drops its experiments (`ExperimentCatalog`) too.
///
/// The cache follows the same rules as the device cache: it answers only while notifications
/// are followed, a load never stores over an invalidation that came while it ran (an epoch),
/// and it holds at most `maxApps` catalogs (emptied when full: catalogs are small and cheap
/// to load again).
public final class FeatureCatalog: Sendable {
    public static let notificationChannel = "locgate_features"
    public static let maxApps = 10_000

    private struct Cache {
        var catalogs: [UUID: [Feature]] = [:]
        var epoch: UInt64 = 0
    }

    private let pool: PostgresConnectionPool
    private let coherence: CacheCoherence
    private let cache = Mutex(Cache())
    /// The experiments cached beside the features, dropped with them (nil: none cached).
    private let experiments: ExperimentCatalog?

    public init(
        pool: PostgresConnectionPool, coherence: CacheCoherence = CacheCoherence(alwaysFollowing: true),
        experiments: ExperimentCatalog? = nil
    ) {
        self.pool = pool
        self.coherence = coherence
        self.experiments = experiments
    }

    /// The app's features when this process holds them and may answer from memory; nil when
    /// `features(appID:)` would read them. Synchronous, for the gate's path without a
    /// suspension point.
    public func cachedFeatures(appID: UUID) -> [Feature]? {
        guard coherence.isFollowing else { return nil }
        return cache.withLock { $0.catalogs[appID] }
    }

    /// The app's features, sorted by key.
    public func features(appID: UUID) async throws -> [Feature] {
        let following = coherence.isFollowing
        let (cached, epoch) = cache.withLock { ($0.catalogs[appID], $0.epoch) }
        if following, let cached { return cached }
        let features = try await pool.withConnection { connection in
            try connection.query("SELECT definition::text FROM features WHERE app_id = \(appID) ORDER BY key")
                .map { try JSONText.decode(Feature.self, try $0.decode(0)) }
        }
        if following {
            cache.withLock { cache in
                guard cache.epoch == epoch else { return }
                if cache.catalogs.count >= Self.maxApps { cache.catalogs = [:] }
                cache.catalogs[appID] = features
            }
        }
        return features
    }

    public func feature(appID: UUID, key: String) async throws -> Feature? {
        try await features(appID: appID).first { $0.key == key }
    }

    /// SPEC §5: a catalog holds up to 1,000 features.
    public static let maxFeatures = 1000

    /// Creates or replaces a feature; true when it was created. Creating one beyond
    /// `maxFeatures` is a `validationFailed`; replacing one always works. The change is
    /// recorded in the same transaction (SPEC §14): `featureDisabled` or `featureEnabled` when
    /// it turns an existing feature's `disabled` on or off (SPEC §15), else `featurePut`, with
    /// `created` and the `changes` of every field.
    public func put(appID: UUID, feature: Feature, actor: AuditActor) async throws -> Bool {
        let definition = try JSONText.encode(feature)
        let created = try await pool.transaction { connection in
            // One catalog change of an app at a time, so that the cap holds under concurrency.
            try Self.lockCatalog(appID: appID, on: connection)
            let count = try connection.query(
                "SELECT count(*) FILTER (WHERE key <> \(feature.key)) FROM features WHERE app_id = \(appID)"
            ).first?.decode(0, as: Int64.self) ?? 0
            guard count < Self.maxFeatures else {
                throw ServiceError(.validationFailed, "the catalog holds at most \(Self.maxFeatures) features; delete one first")
            }
            // SPEC §16: a key is a feature's or an experiment's (the lock above covers both).
            guard try connection.query(
                "SELECT 1 FROM experiments WHERE app_id = \(appID) AND key = \(feature.key)"
            ).isEmpty else {
                throw ServiceError(.keyInUse, "key: \(feature.key) is an experiment's key; a feature needs a key of its own")
            }
            // The feature as it was (the lock above keeps it so), to tell a kill switch's flip.
            let previous = try connection.query(
                "SELECT definition::text FROM features WHERE app_id = \(appID) AND key = \(feature.key)"
            ).first.map { try JSONText.decode(Feature.self, try $0.decode(0)) }
            let rows = try connection.query(
                """
                INSERT INTO features (app_id, key, definition) VALUES (\(appID), \(feature.key), \(PostgresJSON(definition)))
                ON CONFLICT (app_id, key) DO UPDATE SET definition = excluded.definition, updated_at = now()
                RETURNING (xmax = 0)
                """)
            let inserted = try rows.first?.decode(0, as: Bool.self) ?? false
            try AdminAuditLog.record(
                AuditChange(
                    appID: appID, actor: actor, action: Self.auditAction(from: previous, to: feature), target: feature.key,
                    details: ["created": .bool(inserted), "changes": Self.changes(from: previous, to: feature)]),
                on: connection)
            try connection.query("SELECT pg_notify(\(Self.notificationChannel), \(appID.uuidString))")
            return inserted
        }
        invalidate(appID)
        return created
    }

    /// The fields a PATCH may hold: a feature's, without its key (SPEC §14 "Partial changes").
    public static let fields: Set<String> = [
        "requires", "services", "accuracy", "description", "delivery", "background", "disabled", "minAppVersion",
    ]

    /// Changes some fields of a feature: `patch` holds the members of a JSON merge patch (RFC
    /// 7396) of its definition. Nil when the app has no feature `key`. A member replaces its
    /// field; `null` resets the field to its default (`requires` has none: a 422). The result
    /// is checked as a PUT body is (`parseDefinition`), so that a PATCH is refused where the PUT
    /// of the same feature would be, with the same message.
    ///
    /// Atomic (SPEC §14): the feature is read and written in one transaction, under the app's
    /// catalog lock (which PUT and DELETE take) and with its row locked, so that a concurrent
    /// change of another field is kept. Recorded in the same transaction as a PUT is:
    /// `featureDisabled`/`featureEnabled` when `disabled` flips, else `featurePut`, one entry
    /// with all of its `changes`; every process is told (`locgate_features`).
    public func patch(appID: UUID, key: String, patch: [JSONNode.Member], actor: AuditActor) async throws -> Feature? {
        try Self.checkPatch(patch)
        let patched = try await pool.transaction { connection -> Feature? in
            try Self.lockCatalog(appID: appID, on: connection)
            guard let row = try connection.query(
                "SELECT definition::text FROM features WHERE app_id = \(appID) AND key = \(key) FOR UPDATE"
            ).first else { return nil }
            let previous = try JSONText.decode(Feature.self, try row.decode(0))
            let feature = try Self.merge(patch, into: previous)
            let definition = try JSONText.encode(feature)
            try connection.query(
                """
                UPDATE features SET definition = \(PostgresJSON(definition)), updated_at = now()
                WHERE app_id = \(appID) AND key = \(key)
                """)
            try AdminAuditLog.record(
                AuditChange(
                    appID: appID, actor: actor, action: Self.auditAction(from: previous, to: feature), target: key,
                    details: ["changes": Self.changes(from: previous, to: feature)]),
                on: connection)
            try connection.query("SELECT pg_notify(\(Self.notificationChannel), \(appID.uuidString))")
            return feature
        }
        if patched != nil { invalidate(appID) }
        return patched
    }

    /// `locgate features disable` and `enable` (SPEC §14): the patch `{"disabled": disabled}`,
    /// which changes nothing else of the feature.
    public func setDisabled(_ disabled: Bool, appID: UUID, key: String, actor: AuditActor) async throws -> Feature? {
        try await patch(appID: appID, key: key, patch: [JSONNode.Member(key: "disabled", value: .bool(disabled))], actor: actor)
    }

    /// Deletes a feature; false when there was none. `featureDeleted` is recorded in the same
    /// transaction (SPEC §14), with the `changes` of every field (to null).
    public func delete(appID: UUID, key: String, actor: AuditActor) async throws -> Bool {
        let deleted = try await pool.transaction { connection in
            let rows = try connection.query(
                "DELETE FROM features WHERE app_id = \(appID) AND key = \(key) RETURNING definition::text")
            guard let row = rows.first else { return false }
            let previous = try? JSONText.decode(Feature.self, try row.decode(0))
            try AdminAuditLog.record(
                AuditChange(
                    appID: appID, actor: actor, action: .featureDeleted, target: key,
                    details: ["changes": Self.changes(from: previous, to: nil)]),
                on: connection)
            try connection.query("SELECT pg_notify(\(Self.notificationChannel), \(appID.uuidString))")
            return true
        }
        invalidate(appID)
        return deleted
    }

    /// Takes the app's catalog lock until the transaction ends: one change of an app's catalog
    /// at a time (PUT, PATCH, DELETE's cap and reads of the feature as it was; an experiment's
    /// changes, `ExperimentCatalog`, take it too).
    static func lockCatalog(appID: UUID, on connection: PostgresConnection) throws {
        try connection.query("SELECT pg_advisory_xact_lock(hashtextextended(\(appID.uuidString), 1))")
    }

    /// The action a change from `previous` (nil: none) to `feature` is recorded as: the kill
    /// switch's flip of an existing feature (SPEC §15), else `featurePut`.
    static func auditAction(from previous: Feature?, to feature: Feature) -> AuditAction {
        guard let previous, previous.disabled != feature.disabled else { return .featurePut }
        return feature.disabled ? .featureDisabled : .featureEnabled
    }

    /// `details.changes` of a feature's audit entry (SPEC §14): `{FIELD: {"from", "to"}}` for
    /// every field whose value differs, as GET shows them; a feature that is not there (before
    /// its creation, after its deletion) has every field null.
    static func changes(from previous: Feature?, to feature: Feature?) -> AuditDetail {
        let before = previous?.auditFields ?? [:]
        let after = feature?.auditFields ?? [:]
        var changes: [String: AuditDetail] = [:]
        for field in Set(before.keys).union(after.keys) {
            let from = before[field] ?? .null, to = after[field] ?? .null
            if from != to { changes[field] = .object(["from": from, "to": to]) }
        }
        return .object(changes)
    }

    /// Refuses a patch whose members are not a feature's fields (422 naming the first such
    /// member), or name one twice (400), before the feature is read.
    static func checkPatch(_ patch: [JSONNode.Member]) throws(ServiceError) {
        var seen = Set<String>()
        for member in patch {
            guard fields.contains(member.key) else {
                throw ServiceError(
                    .validationFailed,
                    "\(member.key.prefix(128)): not a field of a feature (its fields: \(fields.sorted().joined(separator: ", ")))")
            }
            guard seen.insert(member.key).inserted else {
                throw ServiceError(.invalidRequest, "\(member.key): given twice")
            }
        }
    }

    /// RFC 7396 on a feature: its stored definition with each member of `patch` replacing its
    /// field and each `null` removing it (the field then takes its default), read back as a
    /// PUT body (`parseDefinition`).
    static func merge(_ patch: [JSONNode.Member], into feature: Feature) throws -> Feature {
        let encoded = try JSONText.encode(feature)
        guard let stored = JSONNode.parse(encoded), var members = stored.members else {
            throw ServiceError(.internalError, "a stored feature could not be read back")
        }
        members.removeAll { $0.key == "key" }
        for member in patch {
            if member.value.isNull, member.key == "requires" {
                throw ServiceError(.validationFailed, "requires: cannot be reset, it has no default (whenInUse or always)")
            }
            // JSON has no infinity: a number too large for a double would be written back as
            // null (a reset); no field of a feature is a number in any case.
            if let number = member.value.number, !number.isFinite {
                throw ServiceError(.invalidRequest, "\(member.key): not a value this field takes")
            }
            members.removeAll { $0.key == member.key }
            if !member.value.isNull { members.append(member) }
        }
        // What was stored as null (`minAppVersion`) is left out as well: absent is its default.
        members.removeAll { $0.value.isNull }
        var writer = JSONWriter()
        writer.node(.object(members))
        return try parseDefinition(key: feature.key, body: Data(writer.bytes))
    }

    /// Drops a cached catalog (on a notification from any process).
    public func invalidate(_ appID: UUID) {
        cache.withLock { cache in
            cache.epoch &+= 1
            cache.catalogs.removeValue(forKey: appID)
        }
        experiments?.invalidate(appID)
    }

    public func invalidateAll() {
        cache.withLock { cache in
            cache.epoch &+= 1
            cache.catalogs = [:]
        }
        experiments?.invalidateAll()
    }

    /// Reads a feature definition as `PUT /v1/features/{key}` receives it (no `key` in the body).
    public static func parseDefinition(key: String, body: Data) throws(ServiceError) -> Feature {
        struct Definition: Decodable {
            var requires: String
            var services: [String]?
            var accuracy: String?
            var description: String?
            var delivery: String?
            var background: Bool?
            var disabled: Bool?
            var minAppVersion: AnyText?
        }
        do {
            try ClientText.checkKey(key, field: "key", bytes: 1...64)
        } catch {
            throw ServiceError(.validationFailed, error.message)
        }
        let definition: Definition
        do {
            definition = try EventCoding.decode(Definition.self, from: body)
        } catch {
            throw ServiceError(error.kind == .malformedJSON ? .malformedJSON : .invalidRequest, error.message)
        }
        guard let tier = Tier(rawValue: definition.requires) else {
            throw ServiceError(.validationFailed, "requires: must be whenInUse or always")
        }
        var services: [LocationService] = []
        for name in definition.services ?? [] {
            guard let service = LocationService(rawValue: name) else {
                throw ServiceError(.validationFailed, "services: \(name.prefix(64)) is not one of " + LocationService.allCases.map(\.rawValue).joined(separator: ", "))
            }
            if !services.contains(service) { services.append(service) }
        }
        guard let accuracy = AccuracyNeed(rawValue: definition.accuracy ?? "any") else {
            throw ServiceError(.validationFailed, "accuracy: must be any or full")
        }
        if let description = definition.description {
            do {
                try ClientText.check(description, field: "description", bytes: 0...1000)
            } catch {
                throw ServiceError(.validationFailed, error.message)
            }
        }
        guard let delivery = FeatureDelivery(rawValue: definition.delivery ?? FeatureDelivery.locationManager.rawValue) else {
            throw ServiceError(.validationFailed, "delivery: must be locationManager or modern")
        }
        var minAppVersion: AppVersion?
        switch definition.minAppVersion {
        case nil:
            minAppVersion = nil
        case .text(let text)?:
            guard let version = AppVersion(text) else {
                throw ServiceError(.validationFailed, "minAppVersion: must be \(AppVersion.rule), or null")
            }
            minAppVersion = version
        case .other?:
            throw ServiceError(.validationFailed, "minAppVersion: must be a string of \(AppVersion.rule), or null")
        }
        return Feature(
            key: key, requires: tier, services: services, accuracy: accuracy, description: definition.description,
            delivery: delivery, background: definition.background, disabled: definition.disabled ?? false,
            minAppVersion: minAppVersion)
    }
}

/// A JSON value read where a string is expected, so that any other value (a number, an array)
/// is refused as a 422 naming the field, as a string of the wrong form is (SPEC §15's
/// `minAppVersion`), rather than as the decoder's 400 for a mistyped field.
enum AnyText: Decodable, Sendable {
    case text(String)
    case other

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let text = try? container.decode(String.self) {
            self = .text(text)
        } else {
            self = .other
        }
    }
}

extension Feature {
    /// The feature's fields as its audit entries show their values (SPEC §14 `changes`): as GET
    /// shows them, `description` and `minAppVersion` null when there is none.
    var auditFields: [String: AuditDetail] {
        [
            "requires": .string(requires.rawValue),
            "services": .array(services.map { AuditDetail.string($0.rawValue) }),
            "accuracy": .string(accuracy.rawValue),
            "description": description.map { AuditDetail.string($0) } ?? .null,
            "delivery": .string(delivery.rawValue),
            "background": .bool(background),
            "disabled": .bool(disabled),
            "minAppVersion": minAppVersion.map { AuditDetail.string($0.text) } ?? .null,
        ]
    }
}

extension FeatureCatalog: DatabaseCalls {
    /// The app's features, sorted by key, with a database's errors translated as every service
    /// call's are: what each capability reads the catalog through.
    func catalog(_ appID: UUID) async throws(ServiceError) -> [Feature] {
        try await database { try await features(appID: appID) }
    }
}
