/// A place in the global log: the writing transaction and the row's position. Readers page on
/// the pair, never on `position` alone, because positions are handed out at insert and
/// transactions commit in another order.
public struct LogPosition: Sendable, Hashable, Comparable, Codable, CustomStringConvertible {
    public var transactionID: UInt64
    public var position: Int64

    public init(transactionID: UInt64, position: Int64) {
        self.transactionID = transactionID
        self.position = position
    }

    /// Before the first event.
    public static let start = LogPosition(transactionID: 0, position: 0)

    public static func < (lhs: LogPosition, rhs: LogPosition) -> Bool {
        (lhs.transactionID, lhs.position) < (rhs.transactionID, rhs.position)
    }

    public var description: String { "\(transactionID)/\(position)" }
}
