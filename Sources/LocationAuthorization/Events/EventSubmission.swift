import Foundation
import LocationGateJSON

/// One event as a client sends it (SPEC §1): the envelope of stream, idempotency key, time and
/// optimistic-concurrency check around a `LocationEvent`.
public struct EventSubmission: Sendable, Hashable {
    /// Chosen by the client; the idempotency key, unique per app.
    public var id: UUID
    public var userId: String
    public var deviceId: String
    public var occurredAt: Date
    public var event: LocationEvent
    /// The stream's version before this event (0 for a new stream); nil skips the check.
    public var expectedVersion: Int64?

    public init(
        id: UUID, userId: String, deviceId: String, occurredAt: Date, event: LocationEvent,
        expectedVersion: Int64? = nil
    ) {
        self.id = id
        self.userId = userId
        self.deviceId = deviceId
        self.occurredAt = occurredAt
        self.event = event
        self.expectedVersion = expectedVersion
    }

    /// SPEC §1's rule for `userId` and `deviceId` as every refusal states it (the API, OFREP,
    /// the push streams, device tokens, the dashboard, the command line): "userId must be
    /// \(identifierRule)". `isValidIdentifier` checks it.
    public static let identifierRule = "1 to 128 characters of A-Z a-z 0-9 . _ : @ -"

    /// `userId` and `deviceId` are opaque: 1 to 128 of `[A-Za-z0-9._:@-]` (`identifierRule`).
    public static func isValidIdentifier(_ text: String) -> Bool {
        guard !text.isEmpty, text.utf8.count <= 128 else { return false }
        return text.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: ":"), UInt8(ascii: "@"), UInt8(ascii: "-"):
                true
            default:
                false
            }
        }
    }
}

extension EventSubmission: Codable {
    private enum CodingKeys: String, CodingKey {
        case id, userId, deviceId, occurredAt, expectedVersion
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let idText = try container.decode(String.self, forKey: .id)
        guard let id = UUID(uuidString: idText) else {
            throw EventValidationError.invalid("id", "\(idText.prefix(64)) is not a UUID")
        }
        let userId = try container.decode(String.self, forKey: .userId)
        guard Self.isValidIdentifier(userId) else {
            throw EventValidationError.invalid("userId", "must be \(Self.identifierRule)")
        }
        let deviceId = try container.decode(String.self, forKey: .deviceId)
        guard Self.isValidIdentifier(deviceId) else {
            throw EventValidationError.invalid("deviceId", "must be \(Self.identifierRule)")
        }
        let occurredText = try container.decode(String.self, forKey: .occurredAt)
        guard let occurredAt = RFC3339.date(from: occurredText) else {
            throw EventValidationError.invalid("occurredAt", "\(occurredText.prefix(64)) is not an RFC 3339 time")
        }
        guard RFC3339.acceptedRange.contains(occurredAt) else {
            throw EventValidationError.invalid("occurredAt", RFC3339.rangeMessage)
        }
        let expectedVersion: Int64?
        do {
            expectedVersion = try container.decodeIfPresent(Int64.self, forKey: .expectedVersion)
        } catch let error as DecodingError {
            throw error
        } catch {
            // Foundation's decoder calls a number that is no Int64 (`1.5`, `1e40`) a body that
            // is not JSON at all; SPEC §14 makes it a 422 naming the field. (`1.0` it reads as 1.)
            throw EventValidationError.invalid("expectedVersion", "must be an integer (the stream's version before this event)")
        }
        if let expectedVersion, expectedVersion < 0 {
            throw EventValidationError.invalid("expectedVersion", "must be 0 or more")
        }
        let event = try LocationEvent(from: decoder)
        if case .contextReported(let context) = event {
            try ClientText.checkAppVersion(context.appVersion, field: "data.appVersion")
        }
        self.init(
            id: id, userId: userId, deviceId: deviceId, occurredAt: occurredAt,
            event: event, expectedVersion: expectedVersion)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id.uuidString.lowercased(), forKey: .id)
        try container.encode(userId, forKey: .userId)
        try container.encode(deviceId, forKey: .deviceId)
        try container.encode(RFC3339.string(from: occurredAt), forKey: .occurredAt)
        try container.encodeIfPresent(expectedVersion, forKey: .expectedVersion)
        try event.encode(to: encoder)
    }
}

/// RFC 3339 times, with or without fractional seconds: the one reader and writer of them
/// (the event envelope, the batch reader's fast path, `asOf`, analytics' `from` and `to`,
/// `locgate archive --before`). PostgreSQL's own text form is `PostgresTimestamp`'s.
public enum RFC3339 {
    /// The times a request may carry (SPEC §1): from the Unix epoch up to but not including the
    /// year 10000. Everything downstream (PostgreSQL's text form, rollup keys, partitions)
    /// writes a four-digit year, so a time outside is refused where it enters.
    public static let acceptedRange: Range<Date> =
        Date(timeIntervalSince1970: 0)..<Date(timeIntervalSince1970: 253_402_300_800)

    /// The error text for a time outside `acceptedRange`.
    public static let rangeMessage = "must be from 1970-01-01T00:00:00Z up to but not including the year 10000"

    /// The time `text` names, or nil when it is not an RFC 3339 date-time whose every field is
    /// in range. Foundation's parser rolls fields over (February 30 becomes March 2, hour 25
    /// the next day), so the fields are checked on the text first: month 1-12, day within the
    /// month (leap years counted), hour 0-23, minute and second 0-59, an offset's hours 0-23
    /// and minutes 0-59.
    public static func date(from text: String) -> Date? {
        guard text.utf8.count <= 64, hasFieldsInRange(Array(text.utf8)) else { return nil }
        if let date = try? Date(text, strategy: .iso8601) { return date }
        return try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }

    /// An RFC 3339 time, or a full-date (`YYYY-MM-DD`) read as its first instant in UTC: what
    /// analytics' `from` and `to` and `locgate archive --before` accept.
    public static func date(fromTimeOrDay text: String) -> Date? {
        if let time = date(from: text) { return time }
        guard text.utf8.count == 10 else { return nil }
        return date(from: text + "T00:00:00Z")
    }

    /// The common form read by hand, for the batch reader's fast path (a twelfth of a
    /// one-event append went to Foundation's parser): `YYYY-MM-DDTHH:MM:SS` with up to three
    /// fractional digits and `Z`, every field in range, from 1970 (SPEC §1's lower bound; four
    /// digits keep it below the year 10000). Nil for any other form, which `date(from:)` reads;
    /// where both read a text they give the same `Date`, to the last bit.
    public static func utcDate(from text: String) -> Date? {
        var text = text
        return text.withUTF8 { bytes -> Date? in
            let count = bytes.count
            guard count == 20 || (22...24).contains(count),
                  bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"), bytes[10] == UInt8(ascii: "T"),
                  bytes[13] == UInt8(ascii: ":"), bytes[16] == UInt8(ascii: ":"), bytes[count - 1] == UInt8(ascii: "Z"),
                  count == 20 || bytes[19] == UInt8(ascii: ".") else { return nil }
            func number(_ range: Range<Int>) -> Int? {
                var value = 0
                for index in range {
                    let digit = bytes[index] &- UInt8(ascii: "0")
                    guard digit < 10 else { return nil }
                    value = value * 10 + Int(digit)
                }
                return value
            }
            guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
                  let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19),
                  year >= 1970, (1...12).contains(month), day >= 1, day <= daysIn(month: month, year: year),
                  hour <= 23, minute <= 59, second <= 59 else { return nil }
            var fraction = 0.0
            if count > 20 {
                guard let digits = number(20..<(count - 1)) else { return nil }
                fraction = Double(digits) / [10.0, 100.0, 1000.0][count - 22]
            }
            let days = Int(CivilCalendar.daysSinceEpoch(year: Int64(year), month: Int64(month), day: Int64(day)))
            let whole = days * 86_400 + hour * 3600 + minute * 60 + second
            // As Foundation's ISO 8601 parser computes it (whole seconds since 2001, plus the
            // fraction), so that both readers give the same `Date` to the last bit.
            return Date(timeIntervalSinceReferenceDate: Double(whole) - Date.timeIntervalBetween1970AndReferenceDate + fraction)
        }
    }

    /// `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)` with every field in range.
    static func hasFieldsInRange(_ bytes: [UInt8]) -> Bool {
        func number(_ range: Range<Int>) -> Int? {
            guard range.upperBound <= bytes.count else { return nil }
            var value = 0
            for index in range {
                let byte = bytes[index]
                guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
                value = value * 10 + Int(byte - UInt8(ascii: "0"))
            }
            return value
        }
        func byte(_ index: Int, _ allowed: String) -> Bool {
            index < bytes.count && allowed.utf8.contains(bytes[index])
        }
        guard let year = number(0..<4), byte(4, "-"), let month = number(5..<7), byte(7, "-"), let day = number(8..<10),
              byte(10, "Tt"), let hour = number(11..<13), byte(13, ":"), let minute = number(14..<16), byte(16, ":"),
              let second = number(17..<19)
        else { return false }
        guard (1...12).contains(month), (1...daysIn(month: month, year: year)).contains(day), hour < 24, minute < 60, second < 60 else {
            return false
        }
        var index = 19
        if byte(index, ".") {
            index += 1
            let start = index
            while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") { index += 1 }
            guard index > start else { return false }
        }
        if byte(index, "Zz") { return index + 1 == bytes.count }
        guard byte(index, "+-"), let offsetHours = number((index + 1)..<(index + 3)), byte(index + 3, ":"),
              let offsetMinutes = number((index + 4)..<(index + 6)), index + 6 == bytes.count
        else { return false }
        return offsetHours < 24 && offsetMinutes < 60
    }

    /// Days in a month of the proleptic Gregorian calendar (`month` 1-12).
    static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Milliseconds are kept, as PostgreSQL's timestamptz keeps microseconds.
    public static func string(from date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }
}
