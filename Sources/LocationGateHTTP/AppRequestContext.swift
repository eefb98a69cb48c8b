import Hummingbird
import LocationGateService

/// The request context: who is calling, once the authentication middleware has looked.
public struct AppRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The app key behind the request, if any.
    public var identity: APIIdentity?
    /// The request carries the admin token of the configuration.
    public var isAdminToken = false

    public init(source: Source) {
        coreContext = .init(source: source)
    }

    /// SPEC §5: batches are at most 1 MiB.
    public var maxUploadSize: Int { 1 << 20 }
}
