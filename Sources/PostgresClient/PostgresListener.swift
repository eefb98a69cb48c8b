import CLibPQ
import Foundation
import Logging
import Synchronization

/// LISTEN on a connection of its own and deliver every NOTIFY as it arrives.
///
/// The connection waits on its socket with `poll(2)` on a dedicated thread, so it never holds a
/// pool thread or a cooperative thread. The stream ends with an error when the connection is
/// lost; callers that must not miss changes keep polling as a fallback (see `EventLog`).
public enum PostgresListener {
    /// Starts listening; `onListening` is called once the LISTEN statements have run.
    public static func notifications(
        configuration: PostgresConfiguration, channels: [String], logger: Logger,
        onListening: @escaping @Sendable () -> Void = {}
    ) -> AsyncThrowingStream<PostgresNotification, any Error> {
        let (stream, continuation) = AsyncThrowingStream<PostgresNotification, any Error>.makeStream()
        let stopped = Mutex(false)
        continuation.onTermination = { _ in stopped.withLock { $0 = true } }
        let thread = Thread {
            do {
                let connection = try PostgresConnection(configuration: configuration, logger: logger)
                for channel in channels {
                    try connection.execute("LISTEN \(quoteIdentifier(channel))")
                }
                onListening()
                while !stopped.withLock({ $0 }) {
                    var descriptor = pollfd(fd: connection.socket, events: Int16(POLLIN), revents: 0)
                    let ready = poll(&descriptor, 1, 200)
                    if ready < 0 && errno != EINTR {
                        throw PostgresError(.connectionFailed, message: "poll failed with errno \(errno)")
                    }
                    for notification in try connection.consumeNotifications() {
                        continuation.yield(notification)
                    }
                }
                continuation.finish()
            } catch {
                logger.warning("listen connection ended", metadata: ["error": "\(String(reflecting: error))"])
                continuation.finish(throwing: error)
            }
        }
        thread.name = "locgate-listen"
        thread.start()
        return stream
    }

    /// A channel name as a quoted SQL identifier.
    static func quoteIdentifier(_ name: String) -> String {
        "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}
