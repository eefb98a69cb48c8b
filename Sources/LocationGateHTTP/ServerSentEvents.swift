import Foundation
import Hummingbird
import Metrics
import ServiceLifecycle
import Synchronization

/// `text/event-stream` responses fed by a producer task through a bounded buffer.
///
/// The producer reads (the log, the state) and sends; the response writes what is buffered.
/// A reader that leaves `bufferLimit` messages unread is too slow: the producer stops and the
/// stream ends after what is buffered, rather than buffering without end (a change-feed
/// client resumes with Last-Event-ID and misses nothing). A graceful shutdown ends every
/// stream the same way, after what is buffered, with a retry hint (`retry:`, SSE's
/// reconnection time): the client reconnects, to another process behind the balancer or to
/// this one restarted, after `shutdownRetry` rather than at once (SPEC §14).
enum ServerSentEvents {
    /// The reconnection time, in milliseconds, a stream ended by a shutdown asks for.
    static let shutdownRetry = 1000

    /// The field that asks for it, alone in its event (no `data:`, so no message).
    static var shutdownRetryField: String { "retry: \(shutdownRetry)\n\n" }

    /// Where a producer sends.
    struct Sink: Sendable {
        let continuation: AsyncStream<ByteBuffer>.Continuation

        /// False when the reader is too slow: the producer must stop.
        func send(_ text: String) -> Bool {
            if case .dropped = continuation.yield(ByteBuffer(string: text)) { return false }
            return true
        }

        /// One message: `id:` (when given) and one `data:` line.
        func send(id: String?, data: String) -> Bool {
            send((id.map { "id: \($0)\n" } ?? "") + "data: \(data)\n\n")
        }

        /// A comment, which keeps proxies from closing an idle connection.
        func keepAlive() -> Bool { send(": keepalive\n\n") }
    }

    static func response(
        registry: StreamRegistry, slot: StreamSlot, produce: @escaping @Sendable (Sink) async -> Bool
    ) -> Response {
        let headers: HTTPFields = [.contentType: "text/event-stream", .cacheControl: "no-cache"]
        return Response(status: .ok, headers: headers, body: ResponseBody { writer in
            let (buffers, continuation) = AsyncStream<ByteBuffer>.makeStream(bufferingPolicy: .bufferingOldest(registry.bufferLimit))
            let producer = Task {
                // False: the reader was too slow and is dropped.
                if await !produce(Sink(continuation: continuation)) { registry.dropped.increment() }
                continuation.finish()
            }
            let shutdown = ShutdownFlag()
            // A revoked key's stream ends at once: the buffer is finished and what it still
            // holds is never written (SPEC §5).
            slot.onRevoke {
                continuation.finish()
                producer.cancel()
            }
            await withGracefulShutdownHandler {
                for await buffer in buffers {
                    if slot.isRevoked { break }
                    do {
                        try await writer.write(buffer)
                    } catch {
                        break  // the client went away
                    }
                }
            } onGracefulShutdown: {
                shutdown.set()
                continuation.finish()
            }
            producer.cancel()
            slot.release()
            if shutdown.isSet, !slot.isRevoked {
                // Written here, not buffered: a full buffer would drop it. A client that went
                // away fails the write, which changes nothing.
                try? await writer.write(ByteBuffer(string: ServerSentEvents.shutdownRetryField))
            }
            try await writer.finish(nil)
        })
    }
}

/// Whether a graceful shutdown ended a stream: set by the shutdown handler, read after the
/// stream's loop.
private final class ShutdownFlag: Sendable {
    private let value = Mutex(false)

    func set() { value.withLock { $0 = true } }

    var isSet: Bool { value.withLock { $0 } }
}
