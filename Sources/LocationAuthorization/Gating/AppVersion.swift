/// A feature's app version floor (SPEC §15 `minAppVersion`): 1 to 4 dot-separated numbers,
/// such as "5.2" or "2024.11.3.7", each of 1 to 18 ASCII digits (so that every number fits a
/// `UInt64` with room to spare). Kept as written, so that a GET shows what was PUT.
///
/// A device's `appVersion` is free text (1 to 64 bytes, SPEC §1), compared as SPEC §15 says:
/// number by number, a missing number counting as 0 ("5.2" is "5.2.0"), and whatever follows
/// the leading numbers ignored ("5.2.1-beta" is 5.2.1, "5.2.1 (403)" too). A decision: an
/// `appVersion` that does not start with a number ("beta") counts as 0, so it meets only a
/// floor of zeros ("0").
public struct AppVersion: Sendable, Hashable, CustomStringConvertible {
    /// The floor as written.
    public let text: String
    /// Its numbers, 1 to 4 of them.
    public let numbers: [UInt64]

    public static let maxNumbers = 4
    public static let maxDigits = 18
    /// What a refusal says the floor must be, naming no field (the caller names it).
    public static let rule = "1 to 4 dot-separated numbers of 1 to 18 digits, such as \"5.2\""

    /// Nil unless `text` is 1 to 4 dot-separated numbers of 1 to 18 digits, and nothing else.
    public init?(_ text: String) {
        var numbers: [UInt64] = []
        var value: UInt64 = 0
        var digits = 0
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"):
                digits += 1
                guard digits <= Self.maxDigits else { return nil }
                value = value * 10 + UInt64(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "."):
                guard digits > 0, numbers.count < Self.maxNumbers - 1 else { return nil }
                numbers.append(value)
                value = 0
                digits = 0
            default:
                return nil
            }
        }
        guard digits > 0 else { return nil }
        numbers.append(value)
        self.text = text
        self.numbers = numbers
    }

    public var description: String { text }

    /// Whether a device that reported `appVersion` meets the floor: it reported one, and its
    /// leading numbers, compared one by one (missing ones as 0, the rest of the text ignored),
    /// are not lower. Reads the text in place: this runs in the gate for every decision of a
    /// feature with a floor.
    public func isMet(by appVersion: String?) -> Bool {
        guard let appVersion else { return false }
        let bytes = appVersion.utf8
        var index = bytes.startIndex
        var position = 0
        // Only the first four numbers can differ from the floor's; after them the floor's
        // missing numbers are 0, which any further number meets.
        while position < Self.maxNumbers {
            var value: UInt64 = 0
            var digits = 0
            while index < bytes.endIndex, let digit = Self.digit(bytes[index]) {
                // Saturates: a number beyond UInt64 is above every floor's (at most 18 digits).
                value = value > (UInt64.max - 9) / 10 ? UInt64.max : value * 10 + digit
                digits += 1
                index = bytes.index(after: index)
            }
            guard digits > 0 else { break }
            let floor = position < numbers.count ? numbers[position] : 0
            if value != floor { return value > floor }
            position += 1
            // Another number follows only as ".<digit>"; anything else ends the numbers.
            guard index < bytes.endIndex, bytes[index] == UInt8(ascii: ".") else { break }
            let next = bytes.index(after: index)
            guard next < bytes.endIndex, Self.digit(bytes[next]) != nil else { break }
            index = next
        }
        // The device's numbers ended equal so far: the rest of its numbers are 0.
        return numbers.dropFirst(position).allSatisfy { $0 == 0 }
    }

    private static func digit(_ byte: UInt8) -> UInt64? {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") ? UInt64(byte - UInt8(ascii: "0")) : nil
    }
}

/// The stored and API form: the text as written.
extension AppVersion: Codable {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let version = AppVersion(text) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "minAppVersion must be \(Self.rule)")
        }
        self = version
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(text)
    }
}
