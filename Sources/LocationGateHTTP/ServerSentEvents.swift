import Foundation
import Hummingbird
import Metrics
import ServiceLifecycle

/// `text/event-stream` responses fed by a producer task through a bounded buffer.
///
/// The producer reads (the log, the state) and sends; the response writes what is buffered.
/// A reader that leaves `bufferLimit` messages unread is too slow: the producer stops and the
/// stream ends after what is buffered, rather than buffering without end (a change-feed
/// client resumes with Last-Event-ID and misses nothing). A graceful shutdown ends every
/// stream the same way.
enum ServerSentEvents {
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
            await withGracefulShutdownHandler {
                for await buffer in buffers {
                    do {
                        try await writer.write(buffer)
                    } catch {
                        break  // the client went away
                    }
                }
            } onGracefulShutdown: {
                continuation.finish()
            }
            producer.cancel()
            slot.release()
            try await writer.finish(nil)
        })
    }
}
