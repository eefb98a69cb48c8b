import Hummingbird
import LocationGateService
import NIOCore
import Synchronization

/// The request context: who is calling, once the authentication middleware has looked.
///
/// What the middleware learn of a request (the key, whether it is the admin token) is kept in
/// one `RequestFacts` per request, which every copy of the context shares, and set through
/// `nonmutating` setters. So a middleware hands the next one the
/// context it was given, not a mutated copy of its own: a copy retains every reference the
/// context holds (Hummingbird's core storage: the logger, the parameters, the endpoint path;
/// the channel) and its end releases them, and a gate or an append went through three such
/// copies. And a value set further in reaches the middleware outside it: the access log reads
/// the app of the key found after it.
public struct AppRequestContext: RequestContext, RemoteAddressRequestContext {
    public var coreContext: CoreRequestContextStorage
    private let facts = RequestFacts()
    /// The connection, asked for its peer only when an authentication fails.
    private let channel: any Channel

    /// The app key behind the request, if any.
    public var identity: APIIdentity? {
        get { facts.values.withLock { $0.identity } }
        nonmutating set { facts.values.withLock { $0.identity = newValue } }
    }

    /// The request carries the admin token of the configuration.
    public var isAdminToken: Bool {
        get { facts.values.withLock { $0.isAdminToken } }
        nonmutating set { facts.values.withLock { $0.isAdminToken = newValue } }
    }

    /// The peer of the connection (nil in router tests): failed authentications are counted
    /// per address.
    public var remoteAddress: SocketAddress? { channel.remoteAddress }

    /// A flag set when the client's connection closes: a long read given it stops there and
    /// ends its transaction (SPEC §5: a request whose client has gone is cancelled within 1 s).
    func clientGone() -> CancellationFlag {
        let flag = CancellationFlag()
        channel.closeFuture.whenComplete { _ in flag.cancel() }
        return flag
    }

    public init(source: Source) {
        coreContext = .init(source: source)
        channel = source.channel
    }

    /// Handlers return `Encodable` answers; this writes them (sorted keys).
    public var responseEncoder: SortedJSONEncoder { SortedJSONEncoder() }

    /// SPEC §5: batches are at most 1 MiB.
    public var maxUploadSize: Int { 1 << 20 }
}

/// One request's facts, shared by every copy of its context (`AppRequestContext`). The lock
/// is never contended: a request's middleware and handler run one after another; it is what
/// makes the shared record safe to hand to a task the handler starts.
final class RequestFacts: Sendable {
    struct Values {
        var identity: APIIdentity?
        var isAdminToken = false
    }

    let values = Mutex(Values())
}
