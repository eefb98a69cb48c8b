import Foundation

/// Why the queue did not take or change what it was given.
public enum EventQueueError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The queue holds `maxEvents` events or `maxBytes` bytes already; nothing was stored.
    ///
    /// Treat it as "stop recording until the queue drains". The events already queued are the
    /// oldest ones, and the server needs them most: a device's state is the fold of its events in
    /// order, so dropping old events would change what the server computes, while dropping the
    /// new one only delays what it learns. The next `statusObserved` puts the device right (O1).
    case full
    /// The event would be refused by every LocationGate server (a malformed `userId` or
    /// `deviceId`, a string over its bound, a temporary-accuracy request without a purpose key):
    /// the message names the field. Nothing was stored.
    case invalidEvent(String)
    /// An event with this id is already queued or was acknowledged: ids are the idempotency keys,
    /// and reusing one would make the server answer the old event's result for the new event.
    case duplicateID(UUID)
    /// Another `EventQueue`, in this process or another (an app extension sharing the container),
    /// has the directory open. Two writers would interleave their records.
    case locked(String)
    /// `close()` was called.
    case closed
    /// The file system failed (full disk, permissions, an I/O error). When the failure leaves the
    /// files' state uncertain, every later call throws it too until the queue is opened again,
    /// which re-reads the state from the files.
    case io(String)

    public var description: String {
        switch self {
        case .full: "the event queue is full"
        case .invalidEvent(let message): "the event is invalid: \(message)"
        case .duplicateID(let id): "an event with id \(id.uuidString.lowercased()) is already queued or acknowledged"
        case .locked(let path): "another EventQueue has \(path) open"
        case .closed: "the event queue is closed"
        case .io(let message): "event queue I/O failed: \(message)"
        }
    }
}
