/// The rules every string a client sends must follow (SPEC §1 "Strings"), checked at the edge
/// before anything reaches PostgreSQL: valid UTF-8 (a Swift `String` decoded from JSON always
/// is), no control characters (U+0000 to U+001F, U+007F), and a length bounded in bytes, not
/// characters. A value that breaks them is refused whole; nothing is ever stored shortened or
/// altered.
public enum ClientText {
    /// Text: any characters but controls, `bytes` UTF-8 bytes long.
    public static func check(_ text: String, field: String, bytes: ClosedRange<Int>) throws(EventValidationError) {
        let count = text.utf8.count
        guard bytes.contains(count) else {
            throw EventValidationError.invalid(field, lengthMessage(bytes, count))
        }
        if let control = text.utf8.firstIndex(where: { $0 < 0x20 || $0 == 0x7F }) {
            let offset = text.utf8.distance(from: text.utf8.startIndex, to: control)
            throw EventValidationError.invalid(field, "must not contain control characters (found one at byte \(offset))")
        }
    }

    /// A key (Info.plist keys, purpose keys, feature keys): `bytes` bytes of `[A-Za-z0-9._-]`.
    public static func checkKey(_ text: String, field: String, bytes: ClosedRange<Int> = 1...128) throws(EventValidationError) {
        let count = text.utf8.count
        guard bytes.contains(count) else {
            throw EventValidationError.invalid(field, lengthMessage(bytes, count) + " of A-Z a-z 0-9 . _ -")
        }
        guard text.utf8.allSatisfy(isKeyByte) else {
            throw EventValidationError.invalid(field, "must be made of A-Z a-z 0-9 . _ - only")
        }
    }

    /// A Java class name as an error's cause (SPEC §12, `locationButtonSession.cause`): `bytes`
    /// bytes of `[A-Za-z0-9._$-]` (`$` for nested classes, `RemoteException$…`).
    public static func checkClassName(_ text: String, field: String, bytes: ClosedRange<Int>) throws(EventValidationError) {
        let count = text.utf8.count
        guard bytes.contains(count) else {
            throw EventValidationError.invalid(field, lengthMessage(bytes, count) + " of A-Z a-z 0-9 . _ $ -")
        }
        guard text.utf8.allSatisfy({ isKeyByte($0) || $0 == UInt8(ascii: "$") }) else {
            throw EventValidationError.invalid(field, "must be made of A-Z a-z 0-9 . _ $ - only")
        }
    }

    /// The group analytics give the counts of an `appVersion` that only erased devices reported
    /// (SPEC §13): reserved, so that no client's own version is ever taken for it.
    public static let erasedAppVersion = "(erased)"

    /// Refuses a client's `appVersion` of `(erased)` (SPEC §13: a 422 `validationFailed`).
    public static func checkAppVersion(_ text: String?, field: String) throws(EventValidationError) {
        guard text == erasedAppVersion else { return }
        throw EventValidationError.invalid(field, "\(erasedAppVersion) is reserved for the versions only erased devices reported")
    }

    static func isKeyByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"):
            true
        default:
            false
        }
    }

    private static func lengthMessage(_ bytes: ClosedRange<Int>, _ count: Int) -> String {
        bytes.lowerBound == 0
            ? "must be at most \(bytes.upperBound) bytes, not \(count)"
            : "must be \(bytes.lowerBound) to \(bytes.upperBound) bytes, not \(count)"
    }
}
