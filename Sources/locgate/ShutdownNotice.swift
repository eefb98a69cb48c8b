import Logging
import ServiceLifecycle

/// The one line `locgate serve` logs when it is told to stop (SIGTERM or SIGINT, SPEC §14): a
/// service that does nothing but wait for the group's graceful shutdown. The server's own
/// services stop without a word (swift-service-lifecycle logs at debug level).
struct ShutdownNotice: Service {
    let logger: Logger
    /// How long requests in flight have to finish.
    let grace: Duration

    func run() async throws {
        do {
            try await gracefulShutdown()
        } catch {
            return  // cancelled: the group is stopping otherwise, and says so itself
        }
        logger.notice(
            "shutting down: no new connections; requests in flight may finish; push streams end with a retry hint",
            metadata: ["graceSeconds": "\(grace.components.seconds)"])
    }
}
