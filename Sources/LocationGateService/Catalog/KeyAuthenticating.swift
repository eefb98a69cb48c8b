import Foundation

/// What authenticating a request needs of the app keys (the HTTP layer's
/// `AuthenticationMiddleware` and the dashboard's sign-in): the identity behind a key, from
/// memory when the process knows it, and a watch on its revocation for the streams it opens.
public protocol KeyAuthenticating: KeyRevocationWatching {
    /// The identity behind `key` when this process knows it and may answer from memory; nil
    /// when `identity(forKey:)` must look.
    func cachedIdentity(forKey key: Substring) -> APIIdentity?
    /// The identity behind `key`, nil when it is no live key (looked up, batched and bounded).
    func identity(forKey key: String) async throws -> APIIdentity?
}

extension APIKeys: KeyAuthenticating {}

extension CatalogCapability {
    /// The keys as authentication sees them.
    public var authentication: any KeyAuthenticating { keys }
}
