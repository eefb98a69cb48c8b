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
public final class PostgresConnectionPool: Sendable {
    private struct State {
        var idle: [PostgresConnection] = []
        var open = 0
        var waiters: [CheckedContinuation<PostgresConnection, any Error>] = []
        var closed = false
    }

    private enum LeaseAction {
        case use(PostgresConnection)
        case create
        case fail(PostgresError)
        case wait
    }

    public let configuration: PostgresConfiguration
    public let size: Int
    private let threadPool: NIOThreadPool
    private let logger: Logger
    private let state = Mutex(State())

    /// Creates the pool; connections are opened on first use, up to `size`.
    public init(configuration: PostgresConfiguration, size: Int = 4, logger: Logger) {
        self.configuration = configuration
        self.size = max(1, size)
        self.logger = logger
        self.threadPool = NIOThreadPool(numberOfThreads: max(1, size))
        threadPool.start()
    }

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
        let (idle, waiters) = state.withLock { state in
            state.closed = true
            defer {
                state.open -= state.idle.count
                state.idle = []
                state.waiters = []
            }
            return (state.idle, state.waiters)
        }
        _ = idle
        for waiter in waiters {
            waiter.resume(throwing: PostgresError(.shutDown, message: "the pool is closed"))
        }
        try? await threadPool.shutdownGracefully()
    }

    private func lease() async throws -> PostgresConnection {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<PostgresConnection, any Error>) in
            let action = state.withLock { state -> LeaseAction in
                if state.closed { return .fail(PostgresError(.shutDown, message: "the pool is closed")) }
                if let connection = state.idle.popLast() { return .use(connection) }
                if state.open < size {
                    state.open += 1
                    return .create
                }
                state.waiters.append(continuation)
                return .wait
            }
            switch action {
            case .use(let connection): continuation.resume(returning: connection)
            case .create: connect(for: continuation)
            case .fail(let error): continuation.resume(throwing: error)
            case .wait: break
            }
        }
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

    /// A connection could not be opened: the database is unreachable, so every waiter hears it
    /// now rather than waiting for a connection that will not come.
    private func abandonOpen(_ error: any Error, first: CheckedContinuation<PostgresConnection, any Error>) {
        let waiters = state.withLock { state in
            state.open -= 1
            defer { state.waiters = [] }
            return state.waiters
        }
        first.resume(throwing: error)
        waiters.forEach { $0.resume(throwing: error) }
    }

    private func release(_ connection: PostgresConnection) {
        enum ReleaseAction {
            case handOver(CheckedContinuation<PostgresConnection, any Error>)
            case replace(CheckedContinuation<PostgresConnection, any Error>)
            case none
        }
        let action = state.withLock { state -> ReleaseAction in
            if connection.isBroken || state.closed {
                if !state.closed, !state.waiters.isEmpty {
                    // The broken connection's slot goes to a new connection for the next waiter.
                    return .replace(state.waiters.removeFirst())
                }
                state.open -= 1
                return .none
            }
            if !state.waiters.isEmpty { return .handOver(state.waiters.removeFirst()) }
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
