import Foundation
import LocationAuthorization
import LocationGateJSON

/// The catalog face of the service (SPEC §4, §5, §14): apps, their API keys and their feature
/// catalogs. Every change is recorded in the admin audit trail with its `actor`, in the
/// change's own transaction.
public protocol CatalogService: Sendable {
    /// Creates an app and its first key, with scope admin.
    func createApp(name: String, actor: AuditActor) async throws(ServiceError) -> (appID: UUID, apiKey: String, keyID: UUID)
    /// The app's name; nil when there is no such app.
    func appName(appID: UUID) async throws(ServiceError) -> String?
    /// Makes a key of the app; a device-bound ingest key also gets its token secret. The key
    /// and the secret are answered once and never stored as text.
    func createKey(
        appID: UUID, scope: KeyScope, deviceBound: Bool, actor: AuditActor
    ) async throws(ServiceError) -> (id: UUID, key: String, tokenSecret: String?)
    /// Revokes one of the app's keys; false when the app has no such live key.
    func revokeKey(appID: UUID, keyID: UUID, actor: AuditActor) async throws(ServiceError) -> Bool
    /// The app's live keys, oldest first: never a key or its hash.
    func listKeys(appID: UUID) async throws(ServiceError) -> [APIKeys.Listing]
    /// The app's features, sorted by key.
    func listFeatures(appID: UUID) async throws(ServiceError) -> [Feature]
    /// One feature of the app; nil when it has none with that key.
    func feature(appID: UUID, key: String) async throws(ServiceError) -> Feature?
    /// Creates or replaces a feature; true when it was created.
    func putFeature(appID: UUID, feature: Feature, actor: AuditActor) async throws(ServiceError) -> Bool
    /// Changes only the fields `patch` names (a JSON merge patch's members, RFC 7396; SPEC §14
    /// "Partial changes"), atomically; the whole feature as it now is, nil when there is none.
    func patchFeature(appID: UUID, key: String, patch: [JSONNode.Member], actor: AuditActor) async throws(ServiceError) -> Feature?
    /// Deletes a feature; false when there was none.
    func deleteFeature(appID: UUID, key: String, actor: AuditActor) async throws(ServiceError) -> Bool
    /// Turns a feature's kill switch on or off (SPEC §15); the whole feature as it now is, nil
    /// when there is none.
    func setFeatureDisabled(_ disabled: Bool, appID: UUID, key: String, actor: AuditActor) async throws(ServiceError) -> Feature?
    /// What putting `feature` would change for the app's devices now, changing nothing (SPEC §15);
    /// stopped when `cancellation` is set (its client went).
    func previewFeature(appID: UUID, feature: Feature, cancellation: CancellationFlag) async throws(ServiceError) -> FeaturePreview
}
