import CLibPQ
import Foundation
import Logging
import Synchronization

/// LISTEN on a connection of its own and deliver every NOTIFY as it arrives.
///
/// The connection waits on its socket with `poll(2)` on a dedicated thread, so it never holds a
/// pool thread or a cooperative thread. Every `heartbeat` it sends `SELECT 1` and expects the
/// answer within twice that: a connection that died without closing (a failover, a firewall
/// dropping an idle flow) is noticed then, not hours later. `onAlive` is called after LISTEN
/// and after each answered heartbeat, so a caller can tell how recently the connection was
/// known to deliver. The stream ends with an error when the connection is lost; notifications
/// sent meanwhile are lost with it, so callers resynchronize when they listen again.
public enum PostgresListener {
    /// The `application_name` of listening connections, so operators (and fault tests) can
    /// find them in `pg_stat_activity`.
    public static let applicationName = "locgate-listen"

    /// Starts listening; `onListening` is called once the LISTEN statements have run.
    /// Notifications that `ignoring` matches are dropped on the listening thread, before they
    /// are copied or handed on (a process's own appends, which it need not hear of).
    public static func notifications(
        configuration: PostgresConfiguration, channels: [String], logger: Logger,
        heartbeat: Duration = .milliseconds(250), ignoring: NotificationFilter? = nil,
        onListening: @escaping @Sendable () -> Void = {},
        onAlive: @escaping @Sendable () -> Void = {}
    ) -> AsyncThrowingStream<PostgresNotification, any Error> {
        let (stream, continuation) = AsyncThrowingStream<PostgresNotification, any Error>.makeStream()
        let stopped = Mutex(false)
        continuation.onTermination = { _ in stopped.withLock { $0 = true } }
        var listenConfiguration = configuration
        listenConfiguration.applicationName = applicationName
        let thread = Thread { [listenConfiguration] in
            do {
                let connection = try PostgresConnection(configuration: listenConfiguration, logger: logger)
                for channel in channels {
                    try connection.execute("LISTEN \(quoteIdentifier(channel))")
                }
                onListening()
                onAlive()
                var lastPing = ContinuousClock.now
                let wait = Int32(clamping: heartbeat.components.seconds * 1000 + heartbeat.components.attoseconds / 1_000_000_000_000_000)
                while !stopped.withLock({ $0 }) {
                    var descriptor = pollfd(fd: connection.socket, events: Int16(POLLIN), revents: 0)
                    let ready = poll(&descriptor, 1, max(1, wait))
                    if ready < 0 && errno != EINTR {
                        throw PostgresError(.connectionFailed, message: "poll failed with errno \(errno)")
                    }
                    for notification in try connection.consumeNotifications(ignoring: ignoring) {
                        continuation.yield(notification)
                    }
                    if ContinuousClock.now - lastPing >= heartbeat {
                        try connection.ping(timeout: heartbeat * 2)
                        lastPing = ContinuousClock.now
                        // Notifications that arrived with the answer, before reporting alive.
                        for notification in try connection.consumeNotifications(ignoring: ignoring) {
                            continuation.yield(notification)
                        }
                        onAlive()
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
