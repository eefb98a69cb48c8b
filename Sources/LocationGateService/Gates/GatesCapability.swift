import EventLog
import Foundation
import LocationAuthorization
import Logging
import Metrics
import PostgresClient

/// The gates (SPEC §5): decisions from memory for a device, a user or many devices, and
/// OFREP's evaluations (`OFREPEvaluation.swift`). A device missing from the cache is loaded
/// from the projection once. The HTTP layer sees it as `GateReading` and `OFREPEvaluating`.
public final class GatesCapability: Sendable, DatabaseCalls {
    let cache: DeviceStateCache
    let features: FeatureCatalog
    let gateStore: GateStore

    /// SPEC §5: at most 10,000 devices in a gate query, 100 features (none twice), and
    /// 100,000 decisions in all.
    public static let maxQueryDevices = 10_000
    public static let maxQueryFeatures = 100
    public static let maxQueryDecisions = 100_000

    init(cache: DeviceStateCache, features: FeatureCatalog, gateStore: GateStore) {
        self.cache = cache
        self.features = features
        self.gateStore = gateStore
    }

    /// A device's state from memory, loaded once from the projection on a miss.
    public func device(_ key: StreamKey) async throws(ServiceError) -> DeviceStateCache.Entry {
        if let entry = cache.entry(key) { return entry }
        let ticket = cache.ticket(key)
        let loaded = try await database { try await gateStore.devices(appID: key.appID, keys: [key]) }
        guard let row = loaded[key] else { return DeviceStateCache.Entry(version: 0, state: DeviceState()) }
        cache.fill(key, ticket: ticket, version: row.version, state: row.state)
        return DeviceStateCache.Entry(version: row.version, state: row.state)
    }

    public func deviceGates(_ key: StreamKey) async throws(ServiceError) -> DeviceGates {
        let entry = try await device(key)
        let features = try await self.features.catalog(key.appID)
        let state = entry.state
        return DeviceGates(
            userId: key.userID, deviceId: key.deviceID, status: state.status, provisional: state.provisional,
            temporary: state.temporary, accuracy: state.effectiveAccuracy, version: entry.version,
            decisions: features.map { state.decide($0, version: entry.version) })
    }

    public func deviceGate(_ key: StreamKey, feature featureKey: String) async throws(ServiceError) -> GateDecision {
        let catalog: [Feature]
        if let cached = features.cachedFeatures(appID: key.appID) { catalog = cached } else { catalog = try await features.catalog(key.appID) }
        let feature = try Self.feature(featureKey, in: catalog)
        let entry: DeviceStateCache.Entry
        if let cached = cache.entry(key) { entry = cached } else { entry = try await device(key) }
        return entry.state.decide(feature, version: entry.version)
    }

    public func cachedDeviceGate(_ key: StreamKey, feature featureKey: String) throws(ServiceError) -> GateDecision? {
        guard let catalog = features.cachedFeatures(appID: key.appID) else { return nil }
        let feature = try Self.feature(featureKey, in: catalog)
        guard let entry = cache.entry(key) else { return nil }
        return entry.state.decide(feature, version: entry.version)
    }

    private static func feature(_ key: String, in catalog: [Feature]) throws(ServiceError) -> Feature {
        guard let feature = catalog.first(where: { $0.key == key }) else {
            throw ServiceError(.notFound, "no feature \(key.prefix(128))")
        }
        return feature
    }

    /// Every device of a user; a user with no devices is one device with no events.
    public func userDevices(appID: UUID, userID: String) async throws(ServiceError) -> [(String, DeviceStateCache.Entry)] {
        let stored = try await database { try await gateStore.devices(appID: appID, userID: userID) }
        return stored.map { deviceID, entry in
            let key = StreamKey(appID: appID, userID: userID, deviceID: deviceID)
            if let cached = cache.entry(key), cached.version > entry.version { return (deviceID, cached) }
            return (deviceID, entry)
        }
    }

    /// The user level of a feature (SPEC §5, OFREP without `deviceId`): the first device that
    /// enables it decides, else the first device's reason; a user with no devices is one device
    /// with no events. `userGates` and OFREP both answer with this one rule.
    public static func userDecision(_ feature: Feature, devices: [DeviceStateCache.Entry]) -> GateDecision {
        let gates = devices.isEmpty
            ? [DeviceState().decide(feature, version: 0)]
            : devices.map { $0.state.decide(feature, version: $0.version) }
        return gates.first(where: \.enabled) ?? gates[0]
    }

    public func userGates(appID: UUID, userID: String) async throws(ServiceError) -> UserGates {
        let devices = try await userDevices(appID: appID, userID: userID)
        let features = try await self.features.catalog(appID)
        let verdicts = features.map { feature in
            let perDevice = devices.map { deviceID, entry in
                let decision = entry.state.decide(feature, version: entry.version)
                return UserGates.DeviceVerdict(deviceId: deviceID, enabled: decision.enabled, reason: decision.reason, action: decision.action)
            }
            let enabled = Self.userDecision(feature, devices: devices.map(\.1)).enabled
            return UserGates.FeatureVerdict(feature: feature.key, enabled: enabled, devices: perDevice)
        }
        return UserGates(userId: userID, decisions: verdicts)
    }

    /// `POST /v1/gates/query`: many devices at once; misses load in one query.
    public func query(appID: UUID, devices: [(userID: String, deviceID: String)], featureKeys: [String]?) async throws(ServiceError) -> [DeviceDecisions] {
        guard devices.count <= Self.maxQueryDevices else {
            throw ServiceError(.tooLarge, "a query holds at most \(Self.maxQueryDevices) devices")
        }
        if let featureKeys {
            guard featureKeys.count <= Self.maxQueryFeatures else {
                throw ServiceError(.validationFailed, "features: a query names at most \(Self.maxQueryFeatures) features")
            }
            var seen = Set<String>()
            for key in featureKeys where !seen.insert(key).inserted {
                throw ServiceError(.validationFailed, "features: \(key.prefix(128)) is named twice")
            }
        }
        let catalog = try await features.catalog(appID)
        var selected = catalog
        if let featureKeys {
            selected = []
            for key in featureKeys {
                guard let feature = catalog.first(where: { $0.key == key }) else {
                    throw ServiceError(.validationFailed, "features: no feature \(key.prefix(128))")
                }
                selected.append(feature)
            }
        }
        guard devices.count * selected.count <= Self.maxQueryDecisions else {
            throw ServiceError(
                .tooLarge,
                "a query answers at most \(Self.maxQueryDecisions) decisions: \(devices.count) devices × \(selected.count) features")
        }
        let keys = devices.map { StreamKey(appID: appID, userID: $0.userID, deviceID: $0.deviceID) }
        var entries: [StreamKey: DeviceStateCache.Entry] = [:]
        var missing: [StreamKey] = []
        for key in keys {
            if let entry = cache.entry(key) { entries[key] = entry } else { missing.append(key) }
        }
        if !missing.isEmpty {
            let missing = missing
            let tickets = missing.map { cache.ticket($0) }
            let loaded = try await database { try await gateStore.devices(appID: appID, keys: missing) }
            for (key, ticket) in zip(missing, tickets) {
                guard let row = loaded[key] else { continue }
                entries[key] = DeviceStateCache.Entry(version: row.version, state: row.state)
                cache.fill(key, ticket: ticket, version: row.version, state: row.state)
            }
        }
        return keys.map { key in
            let entry = entries[key] ?? DeviceStateCache.Entry(version: 0, state: DeviceState())
            return DeviceDecisions(
                userId: key.userID, deviceId: key.deviceID,
                decisions: selected.map { entry.state.decide($0, version: entry.version) })
        }
    }
}
