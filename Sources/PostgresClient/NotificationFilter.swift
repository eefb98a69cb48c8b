import Foundation

/// Notifications a listener drops as they arrive (`PostgresListener.notifications(ignoring:)`):
/// those on `channel` whose payload starts with `payloadPrefix`. Matched on libpq's C strings,
/// so a dropped notification is never copied into a `String` nor handed to another task.
public struct NotificationFilter: Sendable, Hashable {
    public var channel: String
    public var payloadPrefix: [UInt8]

    public init(channel: String, payloadPrefix: [UInt8]) {
        self.channel = channel
        self.payloadPrefix = payloadPrefix
    }

    /// Whether a notification with this channel and payload (NUL-terminated) is to be dropped.
    func matches(channel name: UnsafePointer<CChar>, payload: UnsafePointer<CChar>) -> Bool {
        guard channel.withCString({ strcmp($0, name) == 0 }) else { return false }
        return payload.withMemoryRebound(to: UInt8.self, capacity: payloadPrefix.count) { bytes in
            // A payload shorter than the prefix ends with a NUL, which no prefix byte equals.
            for (offset, byte) in payloadPrefix.enumerated() where bytes[offset] != byte { return false }
            return true
        }
    }
}
