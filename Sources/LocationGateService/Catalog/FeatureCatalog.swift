import EventLog
import Foundation
import LocationAuthorization
import PostgresClient
import Synchronization

/// Each app's features (SPEC §4), from the `features` table, cached in memory. Changes notify
/// `locgate_features` with the app id, and every process drops that app's cached catalog.
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

    public init(pool: PostgresConnectionPool, coherence: CacheCoherence = CacheCoherence(alwaysFollowing: true)) {
        self.pool = pool
        self.coherence = coherence
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
    /// it turns an existing feature's `disabled` on or off (SPEC §15), else `featurePut`.
    public func put(appID: UUID, feature: Feature, actor: AuditActor) async throws -> Bool {
        let definition = try JSONText.encode(feature)
        let created = try await pool.transaction { connection in
            // One catalog change of an app at a time, so that the cap holds under concurrency.
            try connection.query("SELECT pg_advisory_xact_lock(hashtextextended(\(appID.uuidString), 1))")
            let count = try connection.query(
                "SELECT count(*) FILTER (WHERE key <> \(feature.key)) FROM features WHERE app_id = \(appID)"
            ).first?.decode(0, as: Int64.self) ?? 0
            guard count < Self.maxFeatures else {
                throw ServiceError(.validationFailed, "the catalog holds at most \(Self.maxFeatures) features; delete one first")
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
            let action: AuditAction
            if let previous, previous.disabled != feature.disabled {
                action = feature.disabled ? .featureDisabled : .featureEnabled
            } else {
                action = .featurePut
            }
            try AdminAuditLog.record(
                AuditChange(appID: appID, actor: actor, action: action, target: feature.key, details: ["created": .bool(inserted)]),
                on: connection)
            try connection.query("SELECT pg_notify(\(Self.notificationChannel), \(appID.uuidString))")
            return inserted
        }
        invalidate(appID)
        return created
    }

    /// Deletes a feature; false when there was none. `featureDeleted` is recorded in the same
    /// transaction (SPEC §14).
    public func delete(appID: UUID, key: String, actor: AuditActor) async throws -> Bool {
        let deleted = try await pool.transaction { connection in
            let rows = try connection.query("DELETE FROM features WHERE app_id = \(appID) AND key = \(key)")
            guard rows.affectedRows > 0 else { return false }
            try AdminAuditLog.record(AuditChange(appID: appID, actor: actor, action: .featureDeleted, target: key), on: connection)
            try connection.query("SELECT pg_notify(\(Self.notificationChannel), \(appID.uuidString))")
            return true
        }
        invalidate(appID)
        return deleted
    }

    /// Drops a cached catalog (on a notification from any process).
    public func invalidate(_ appID: UUID) {
        cache.withLock { cache in
            cache.epoch &+= 1
            cache.catalogs.removeValue(forKey: appID)
        }
    }

    public func invalidateAll() {
        cache.withLock { cache in
            cache.epoch &+= 1
            cache.catalogs = [:]
        }
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
