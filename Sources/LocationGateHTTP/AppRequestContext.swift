import Hummingbird
import LocationGateService
import NIOCore

/// The request context: who is calling, once the authentication middleware has looked.
public struct AppRequestContext: RequestContext, RemoteAddressRequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The app key behind the request, if any.
    public var identity: APIIdentity? = nil {
        didSet { accessLog?.record(appID: identity?.appID) }
    }
    /// Set by `AccessLogMiddleware` (`locgate serve --access-log`), outside the middleware that
    /// finds the key: the context is a value, so the app found further in reaches the access
    /// log through this shared record. Nil without an access log.
    var accessLog: AccessLogRecord?
    /// The request carries the admin token of the configuration.
    public var isAdminToken = false
    /// The app key a scope group admitted (`RequireScope`), which handlers read with
    /// `caller()`; nil outside a scope group.
    var admitted: APIIdentity?
    /// The connection, asked for its peer only when an authentication fails.
    private let channel: any Channel

    /// The peer of the connection (nil in router tests): failed authentications are counted
    /// per address.
    public var remoteAddress: SocketAddress? { channel.remoteAddress }

    public init(source: Source) {
        coreContext = .init(source: source)
        channel = source.channel
    }

    /// SPEC §5: batches are at most 1 MiB.
    public var maxUploadSize: Int { 1 << 20 }
}
