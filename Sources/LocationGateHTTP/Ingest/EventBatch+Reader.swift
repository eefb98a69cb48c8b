import Foundation
import LocationAuthorization
import LocationGateJSON
import PostgresClient

extension EventBatch {
    /// Reads the common body by hand: `JSONDecoder` was a twelfth of the server's time per
    /// one-event append. Returns the submissions only when the body is one this reader is sure
    /// `JSONDecoder` reads the same way and accepts; nil for anything else (bad input included),
    /// and `decode` then reads it with `JSONDecoder`, whose errors name the field at fault. So
    /// an answer never depends on which reader read the body (`EventBatchReaderTests` checks
    /// both readers against each other on valid, odd and mutated bodies).
    ///
    /// What sends a body to `JSONDecoder`: a byte outside ASCII or a backslash anywhere; a number
    /// that is not a plain integer; a key twice in one object; an event whose type's traits say
    /// its `data` is not for this reader (`EventTraits.reading`: free text has bounds to check,
    /// flags and permission sets rules of their own); a time other than
    /// `YYYY-MM-DDTHH:MM:SS[.f{1,3}]Z`; and every kind of invalid input.
    static func read(_ body: Data) -> [EventSubmission]? {
        body.withUnsafeBytes { raw -> [EventSubmission]? in
            let bytes = raw.bindMemory(to: UInt8.self)
            guard isPlain(bytes), let root = JSONNode.parse(utf8: bytes), root.hasUniqueKeys,
                  let items = root["events"]?.array else { return nil }
            var submissions: [EventSubmission] = []
            submissions.reserveCapacity(items.count)
            for item in items {
                guard let submission = submission(item) else { return nil }
                submissions.append(submission)
            }
            return submissions
        }
    }

    private static func submission(_ item: JSONNode) -> EventSubmission? {
        guard item.hasUniqueKeys,
              let id = item["id"]?.string.flatMap(UUID.init(postgresUUIDText:)),
              let userId = item["userId"]?.string, EventSubmission.isValidIdentifier(userId),
              let deviceId = item["deviceId"]?.string, EventSubmission.isValidIdentifier(deviceId),
              let occurredAt = item["occurredAt"]?.string.flatMap(utcTime),
              let type = item["type"]?.string.flatMap(EventType.init(rawValue:)),
              let data = item["data"], data.hasUniqueKeys,
              type.traits.readsByHand(has: { data[$0] != nil })
        else { return nil }
        guard let event = LocationEvent(type: type, data: data) else { return nil }
        var expectedVersion: Int64?
        if let node = item["expectedVersion"], !node.isNull {
            // Integers only (`isPlain`), and within a Double's exact range.
            guard case .number(let value) = node, value >= 0, value < 9_007_199_254_740_992,
                  let exact = Int64(exactly: value) else { return nil }
            expectedVersion = exact
        }
        return EventSubmission(
            id: id, userId: userId, deviceId: deviceId, occurredAt: occurredAt, event: event,
            expectedVersion: expectedVersion)
    }

    /// ASCII without backslashes, and outside strings nothing a plain integer or a literal does
    /// not need (no `.`, `+`, or exponent).
    private static func isPlain(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var inString = false
        var previous: UInt8 = 0
        for byte in bytes {
            if byte >= 0x80 || byte == UInt8(ascii: "\\") { return false }
            if byte == UInt8(ascii: "\"") {
                inString.toggle()
            } else if !inString {
                switch byte {
                case UInt8(ascii: "."), UInt8(ascii: "+"): return false
                case UInt8(ascii: "e"), UInt8(ascii: "E"):
                    if previous >= UInt8(ascii: "0") && previous <= UInt8(ascii: "9") { return false }
                default: break
                }
            }
            previous = byte
        }
        return true
    }

    /// `YYYY-MM-DDTHH:MM:SS` with up to three fractional digits and `Z`, every field in range,
    /// from 1970 (SPEC §1's lower bound; four digits keep it below the year 10000); nil for any
    /// other form, which `RFC3339` reads and `EventSubmission` refuses or bounds.
    static func utcTime(_ text: String) -> Date? {
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
            let days = PostgresTimestamp.daysSinceEpoch(year: Int64(year), month: Int64(month), day: Int64(day))
            let whole = days * 86_400 + Int64(hour * 3600 + minute * 60 + second)
            // As Foundation's ISO 8601 parser computes it (whole seconds since 2001, plus the
            // fraction), so that both readers give the same `Date` to the last bit.
            return Date(timeIntervalSinceReferenceDate: Double(whole) - Date.timeIntervalBetween1970AndReferenceDate + fraction)
        }
    }

    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }
}
