import Logging
import NIOPosix
import Synchronization

/// A fixed-size pool of libpq connections that hands out exclusive leases.
///
/// Every operation runs whole on a thread of the pool's own `NIOThreadPool`: libpq blocks, and
/// blocking the cooperative pool or an event loop would stall unrelated work (swift-nio calls its
/// thread pool "a last resort" for exactly such calls). A lease is one connection for one body;
/// the body runs synchronously on that thread, so a transaction costs one thread hop, not one
/// per statement.
///
/// The pool is bounded twice: at most `size` connections, and at most `maxWaiters` callers
/// waiting for one, each for at most `waitTimeout`. Beyond that a caller gets `poolExhausted`
/// at once, so that load the database cannot serve is refused fast instead of queued without
/// end. Connections that the server closed (a restart, a terminated backend) are noticed when
/// idle ones are handed out, and replaced.
public final class PostgresConnectionPool: Sendable {
    private struct Waiter {
        var id: UInt64
        var continuation: CheckedContinuation<PostgresConnection, any Error>
        var timeout: Task<Void, Never>?
    }

    private struct State {
        var idle: [PostgresConnection] = []
        var open = 0
        var waiters: [Waiter] = []
        var nextWaiter: UInt64 = 0
        var closed = false
    }

    private enum LeaseAction {
        case use(PostgresConnection)
        case create
        case fail(PostgresError)
        case wait(UInt64)
    }

    public let configuration: PostgresConfiguration
    public let size: Int
    /// Callers that may wait for a connection at once; more are refused.
    public let maxWaiters: Int
    /// How long a caller waits for a connection before it is refused.
    public let waitTimeout: Duration
    /// The clock waiters' timeouts run on: `ContinuousClock`, or a test's manual clock.
    private let clock: any Clock<Duration>
    private let threadPool: NIOThreadPool
    private let logger: Logger
    private let state = Mutex(State())

    /// Creates the pool; connections are opened on first use, up to `size`. By default up to
    /// 64 callers per connection wait, for at most two seconds each of `clock`'s time.
    public init(
        configuration: PostgresConfiguration, size: Int = 4, maxWaiters: Int? = nil,
        waitTimeout: Duration = .seconds(2), clock: any Clock<Duration> = ContinuousClock(), logger: Logger
    ) {
        self.clock = clock
        self.configuration = configuration
        self.size = max(1, size)
        self.maxWaiters = max(0, maxWaiters ?? 64 * max(1, size))
        self.waitTimeout = waitTimeout
        self.logger = logger
        self.threadPool = NIOThreadPool(numberOfThreads: max(1, size))
        threadPool.start()
    }

    /// Callers waiting for a connection now (a gauge for `/metrics`).
    public var waiting: Int { state.withLock { $0.waiters.count } }

    /// Runs `body` with a connection of its own on a pool thread and returns its result.
    public func withConnection<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) throws -> T) async throws -> T {
        let connection = try await lease()
        do {
            let value = try await threadPool.runIfActive { try body(connection) }
            release(connection)
            return value
        } catch {
            release(connection)
            throw error
        }
    }

    /// Runs `body` in a transaction on a connection of its own.
    public func transaction<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) throws -> T) async throws -> T {
        try await withConnection { connection in try connection.transaction(body) }
    }

    /// Runs one statement.
    @discardableResult
    public func query(_ query: PostgresQuery) async throws -> PostgresRows {
        try await withConnection { connection in try connection.query(query) }
    }

    /// Closes idle connections, fails waiters and refuses new leases. Leases in flight finish and
    /// their connections are closed when returned.
    public func close() async {
        let waiters = state.withLock { state in
            state.closed = true
            defer {
                state.open -= state.idle.count
                state.idle = []
                state.waiters = []
            }
            return state.waiters
        }
        for waiter in waiters {
            waiter.timeout?.cancel()
            waiter.continuation.resume(throwing: PostgresError(.shutDown, message: "the pool is closed"))
        }
        try? await threadPool.shutdownGracefully()
    }

    private func lease() async throws -> PostgresConnection {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<PostgresConnection, any Error>) in
            let action = state.withLock { state -> LeaseAction in
                if state.closed { return .fail(PostgresError(.shutDown, message: "the pool is closed")) }
                while let connection = state.idle.popLast() {
                    if connection.isUsable() { return .use(connection) }
                    // Closed by the server while idle: its slot goes to a new connection.
                    state.open -= 1
                }
                if state.open < size {
                    state.open += 1
                    return .create
                }
                guard state.waiters.count < maxWaiters else {
                    return .fail(PostgresError(
                        .poolExhausted, message: "\(state.waiters.count) callers are already waiting for a connection"))
                }
                state.nextWaiter += 1
                state.waiters.append(Waiter(id: state.nextWaiter, continuation: continuation, timeout: nil))
                return .wait(state.nextWaiter)
            }
            switch action {
            case .use(let connection): continuation.resume(returning: connection)
            case .create: connect(for: continuation)
            case .fail(let error): continuation.resume(throwing: error)
            case .wait(let id):
                let (timeout, clock) = (waitTimeout, self.clock)
                let task = Task { [weak self] in
                    do { try await clock.sleep(for: timeout) } catch { return }
                    guard !Task.isCancelled else { return }
                    self?.expire(id)
                }
                state.withLock { state in
                    if let index = state.waiters.firstIndex(where: { $0.id == id }) {
                        state.waiters[index].timeout = task
                    } else {
                        task.cancel()
                    }
                }
            }
        }
    }

    /// A waiter waited `waitTimeout` without a connection.
    private func expire(_ id: UInt64) {
        let waiter = state.withLock { state -> Waiter? in
            guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
            return state.waiters.remove(at: index)
        }
        waiter?.continuation.resume(throwing: PostgresError(
            .poolExhausted, message: "no connection became free within \(waitTimeout)"))
    }

    /// The first waiter, its timeout cancelled.
    private static func takeWaiter(_ state: inout State) -> CheckedContinuation<PostgresConnection, any Error>? {
        guard !state.waiters.isEmpty else { return nil }
        let waiter = state.waiters.removeFirst()
        waiter.timeout?.cancel()
        return waiter.continuation
    }

    /// Opens a connection on a pool thread for a lease that already counts it as open.
    private func connect(for continuation: CheckedContinuation<PostgresConnection, any Error>) {
        let configuration = self.configuration
        let logger = self.logger
        threadPool.submit { [self] workState in
            guard case .active = workState else {
                abandonOpen(PostgresError(.shutDown, message: "the pool is closed"), first: continuation)
                return
            }
            do {
                let connection = try PostgresConnection(configuration: configuration, logger: logger)
                continuation.resume(returning: connection)
            } catch {
                logger.warning("database connection failed", metadata: ["error": "\(String(reflecting: error))"])
                abandonOpen(error, first: continuation)
            }
        }
    }

    /// A connection could not be opened: the caller it was for hears why. A waiter, if any,
    /// gets the freed slot and an attempt of its own (the database may be back by then), so
    /// one failed attempt never fails callers that did not try.
    private func abandonOpen(_ error: any Error, first: CheckedContinuation<PostgresConnection, any Error>) {
        let next = state.withLock { state -> CheckedContinuation<PostgresConnection, any Error>? in
            if !state.closed, let waiter = Self.takeWaiter(&state) { return waiter }
            state.open -= 1
            return nil
        }
        first.resume(throwing: error)
        if let next { connect(for: next) }
    }

    private func release(_ connection: PostgresConnection) {
        enum ReleaseAction {
            case handOver(CheckedContinuation<PostgresConnection, any Error>)
            case replace(CheckedContinuation<PostgresConnection, any Error>)
            case none
        }
        let action = state.withLock { state -> ReleaseAction in
            if connection.isBroken || state.closed {
                if !state.closed, let waiter = Self.takeWaiter(&state) {
                    // The broken connection's slot goes to a new connection for the next waiter.
                    return .replace(waiter)
                }
                state.open -= 1
                return .none
            }
            if let waiter = Self.takeWaiter(&state) { return .handOver(waiter) }
            state.idle.append(connection)
            return .none
        }
        switch action {
        case .handOver(let waiter): waiter.resume(returning: connection)
        case .replace(let waiter): connect(for: waiter)
        case .none: break
        }
    }
}
