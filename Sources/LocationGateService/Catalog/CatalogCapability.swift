import Foundation
import LocationAuthorization
import LocationGateJSON

/// The catalog (SPEC §4, §5, §14, §15): apps, their API keys and their feature catalogs behind
/// one face, their errors translated as every service call's are, and the preview of a
/// catalog change (`FeaturePreview.swift`). The stores are the module's: every entry point
/// (HTTP, dashboard, command line) changes the catalog through this type.
public final class CatalogCapability: CatalogService, DatabaseCalls {
    let apps: AppRegistry
    let keys: APIKeys
    let features: FeatureCatalog
    /// Decoded states of `device_state_kinds`, shared with the analytics' feature coverage.
    let stateKinds: StateKindCache
    let reads: StandbyReads
    let costly: CostlyWork

    init(apps: AppRegistry, keys: APIKeys, features: FeatureCatalog, stateKinds: StateKindCache, reads: StandbyReads, costly: CostlyWork) {
        self.apps = apps
        self.keys = keys
        self.features = features
        self.stateKinds = stateKinds
        self.reads = reads
        self.costly = costly
    }

    public func createApp(name: String, actor: AuditActor) async throws(ServiceError) -> (appID: UUID, apiKey: String, keyID: UUID) {
        try await database { try await apps.create(name: name, actor: actor) }
    }

    public func appName(appID: UUID) async throws(ServiceError) -> String? {
        try await apps.name(appID: appID)
    }

    public func createKey(
        appID: UUID, scope: KeyScope, deviceBound: Bool, actor: AuditActor
    ) async throws(ServiceError) -> (id: UUID, key: String, tokenSecret: String?) {
        try await keys.create(appID: appID, scope: scope, deviceBound: deviceBound, actor: actor)
    }

    public func revokeKey(appID: UUID, keyID: UUID, actor: AuditActor) async throws(ServiceError) -> Bool {
        try await database { try await keys.revoke(appID: appID, keyID: keyID, actor: actor) }
    }

    public func listKeys(appID: UUID) async throws(ServiceError) -> [APIKeys.Listing] {
        try await keys.list(appID: appID)
    }

    public func listFeatures(appID: UUID) async throws(ServiceError) -> [Feature] {
        try await features.catalog(appID)
    }

    public func feature(appID: UUID, key: String) async throws(ServiceError) -> Feature? {
        try await features.catalog(appID).first { $0.key == key }
    }

    public func putFeature(appID: UUID, feature: Feature, actor: AuditActor) async throws(ServiceError) -> Bool {
        try await database { try await features.put(appID: appID, feature: feature, actor: actor) }
    }

    public func patchFeature(appID: UUID, key: String, patch: [JSONNode.Member], actor: AuditActor) async throws(ServiceError) -> Feature? {
        try await database { try await features.patch(appID: appID, key: key, patch: patch, actor: actor) }
    }

    public func deleteFeature(appID: UUID, key: String, actor: AuditActor) async throws(ServiceError) -> Bool {
        try await database { try await features.delete(appID: appID, key: key, actor: actor) }
    }

    public func setFeatureDisabled(_ disabled: Bool, appID: UUID, key: String, actor: AuditActor) async throws(ServiceError) -> Feature? {
        try await database { try await features.setDisabled(disabled, appID: appID, key: key, actor: actor) }
    }
}
