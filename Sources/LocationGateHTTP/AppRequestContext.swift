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
    /// The path's parameters when the route index found the route (`pathParameter(_:)`).
    var indexedParameters: RouteIndex.IndexedParameters?
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

    /// A parameter of the route's path (`user` of `/v1/users/:user`), as the path has it (not
    /// percent-decoded), whether the route index or Hummingbird's trie found the route: the one
    /// way handlers and middleware read them.
    func pathParameter(_ name: String) -> String? {
        if let indexedParameters { return indexedParameters[name].map(String.init) }
        return coreContext.parameters.get(name)
    }
}
