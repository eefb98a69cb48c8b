import Foundation
import LocationGateJSON

/// `timestamptz` in text form. Sessions run with `TimeZone=UTC` and `DateStyle=ISO`, so the
/// server writes `2026-11-22 10:00:00.123456+00`; parsing is by hand because it is on the hot
/// path of every history and replay read.
public enum PostgresTimestamp {
    /// The times `format` writes as they are: years 0001-9999, PostgreSQL's four-digit form.
    /// Callers refuse anything else where it enters (RFC3339.acceptedRange); a time outside
    /// that still reaches here is clamped to the nearest end rather than trapping on a digit.
    public static let formattableRange: ClosedRange<Double> = -62_135_596_800...253_402_300_799

    public static func format(_ date: Date) -> String {
        let unixSeconds = date.timeIntervalSince1970
        let clamped = unixSeconds.isNaN
            ? 0 : min(max(unixSeconds, formattableRange.lowerBound), formattableRange.upperBound)
        let micros = (clamped * 1_000_000).rounded()
        let seconds = Int64((micros / 1_000_000).rounded(.down))
        let fraction = Int64(micros) - seconds * 1_000_000
        let (year, month, day) = CivilCalendar.civilDate(daysSinceEpoch: floorDiv(seconds, 86_400))
        let secondOfDay = seconds - floorDiv(seconds, 86_400) * 86_400
        // Digits written in place: this runs for every event of a batch and every rollup key.
        return String(unsafeUninitializedCapacity: 27) { out in
            func put(_ value: Int64, _ width: Int, at start: Int) {
                var value = value
                for index in stride(from: start + width - 1, through: start, by: -1) {
                    out[index] = UInt8(ascii: "0") + UInt8(value % 10)
                    value /= 10
                }
            }
            put(year, 4, at: 0)
            out[4] = UInt8(ascii: "-")
            put(month, 2, at: 5)
            out[7] = UInt8(ascii: "-")
            put(day, 2, at: 8)
            out[10] = UInt8(ascii: "T")
            put(secondOfDay / 3600, 2, at: 11)
            out[13] = UInt8(ascii: ":")
            put(secondOfDay / 60 % 60, 2, at: 14)
            out[16] = UInt8(ascii: ":")
            put(secondOfDay % 60, 2, at: 17)
            out[19] = UInt8(ascii: ".")
            put(fraction, 6, at: 20)
            out[26] = UInt8(ascii: "Z")
            return 27
        }
    }

    /// Parses `YYYY-MM-DD HH:MM:SS[.ffffff]+00` (also with `T` or a `Z`, or `+HH:MM`).
    public static func parse(_ text: String) -> Date? {
        let bytes = Array(text.utf8)
        guard bytes.count >= 19 else { return nil }
        func number(_ start: Int, _ length: Int) -> Int64? {
            guard start + length <= bytes.count else { return nil }
            var value: Int64 = 0
            for byte in bytes[start..<(start + length)] {
                guard byte >= 48 && byte <= 57 else { return nil }
                value = value * 10 + Int64(byte - 48)
            }
            return value
        }
        guard let year = number(0, 4), let month = number(5, 2), let day = number(8, 2),
            let hour = number(11, 2), let minute = number(14, 2), let second = number(17, 2)
        else { return nil }
        var index = 19
        var micros: Int64 = 0
        if index < bytes.count && bytes[index] == UInt8(ascii: ".") {
            index += 1
            var digits = 0
            while index < bytes.count, bytes[index] >= 48, bytes[index] <= 57 {
                if digits < 6 { micros = micros * 10 + Int64(bytes[index] - 48) }
                digits += 1
                index += 1
            }
            for _ in digits..<max(digits, 6) { micros *= 10 }
        }
        var offsetSeconds: Int64 = 0
        if index < bytes.count && (bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-")) {
            let sign: Int64 = bytes[index] == UInt8(ascii: "+") ? 1 : -1
            guard let hours = number(index + 1, 2) else { return nil }
            var minutes: Int64 = 0
            if index + 3 < bytes.count {
                let colon = bytes[index + 3] == UInt8(ascii: ":") ? 1 : 0
                minutes = number(index + 3 + colon, 2) ?? 0
            }
            offsetSeconds = sign * (hours * 3600 + minutes * 60)
        }
        let days = CivilCalendar.daysSinceEpoch(year: year, month: month, day: day)
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offsetSeconds
        return Date(timeIntervalSince1970: Double(seconds) + Double(micros) / 1_000_000)
    }

    private static func floorDiv(_ a: Int64, _ b: Int64) -> Int64 {
        a >= 0 ? a / b : (a - b + 1) / b
    }
}
