import Hummingbird
import LocationGateService
import NIOCore

/// The request context: who is calling, once the authentication middleware has looked.
public struct AppRequestContext: RequestContext, RemoteAddressRequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The app key behind the request, if any.
    public var identity: APIIdentity?
    /// The request carries the admin token of the configuration.
    public var isAdminToken = false
    /// The peer of the connection (nil in router tests): failed authentications are counted
    /// per address.
    public let remoteAddress: SocketAddress?

    public init(source: Source) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
    }

    /// SPEC §5: batches are at most 1 MiB.
    public var maxUploadSize: Int { 1 << 20 }
}
