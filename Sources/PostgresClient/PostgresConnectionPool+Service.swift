import ServiceLifecycle

/// The pool as a service of a `ServiceGroup`, as postgres-nio's client is run: it runs until
/// the group shuts down gracefully (or is cancelled), then closes. Listed before the services
/// that use it, it is shut down after them (a group shuts its services down in reverse order),
/// so that requests still finishing keep their connections, and no exit path of a server has
/// to remember to close it.
extension PostgresConnectionPool: Service {
    public func run() async throws {
        // Cancellation ends the wait as a graceful shutdown does: either way the pool closes.
        try? await gracefulShutdown()
        await close()
    }
}
