import Foundation
import LocationAuthorization
import Testing

/// RFC 3339 times are read strictly: a field out of range is no time at all, never rolled over
/// into the next month, day or hour.
@Suite("RFC 3339 times", .timeLimit(.minutes(1)))
struct RFC3339Tests {
    @Test("Fields out of range are refused", arguments: [
        "2026-02-30T00:00:00Z", "2025-02-29T00:00:00Z", "2026-13-01T00:00:00Z", "2026-00-10T00:00:00Z",
        "2026-04-31T00:00:00Z", "2026-11-20T24:00:00Z", "2026-11-20T25:00:00Z", "2026-11-20T10:60:00Z",
        "2026-11-20T10:00:60Z", "2026-11-20T10:00:00+24:00", "2026-11-20T10:00:00+05:60", "2026-11-20T10:00:00",
        "2026-11-20 10:00:00Z", "2026-11-20T10:00:00.Z", "2026-11-20T10:00:00Zjunk", "26-11-20T10:00:00Z", "",
    ])
    func refused(text: String) {
        #expect(RFC3339.date(from: text) == nil, "\(text)")
    }

    @Test("Valid times are read, leap days and offsets included", arguments: [
        ("2024-02-29T12:00:00Z", 1_709_208_000.0), ("2026-11-20T10:00:00.250Z", 1_795_168_800.25),
        ("2026-11-20T11:30:00+01:30", 1_795_168_800.0), ("2000-02-29T00:00:00Z", 951_782_400.0),
        ("2026-11-20T10:00:00-00:00", 1_795_168_800.0),
    ])
    func accepted(text: String, seconds: Double) throws {
        let date = try #require(RFC3339.date(from: text), "\(text)")
        #expect(abs(date.timeIntervalSince1970 - seconds) < 0.001, "\(text): \(date.timeIntervalSince1970)")
    }

    @Test("Every day of 1970-2399 written out reads back as the same day (no roll-over), and day 32 or day 0 never does")
    func everyDayRoundTrips() {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC") ?? .current
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            let year = Int.random(in: 1970...2399, using: &generator), month = Int.random(in: 1...12, using: &generator)
            let days = calendar.range(of: .day, in: .month, for: calendar.date(from: DateComponents(year: year, month: month)) ?? Date())?.count ?? 28
            let day = Int.random(in: 1...days, using: &generator)
            let text = String(format: "%04d-%02d-%02dT%02d:%02d:%02dZ", year, month, day,
                              Int.random(in: 0...23, using: &generator), Int.random(in: 0...59, using: &generator), Int.random(in: 0...59, using: &generator))
            guard let date = RFC3339.date(from: text) else {
                Issue.record("\(text) was refused")
                continue
            }
            let parts = calendar.dateComponents([.year, .month, .day], from: date)
            #expect(parts.year == year && parts.month == month && parts.day == day, "\(text)")
            #expect(RFC3339.date(from: String(format: "%04d-%02d-%02dT00:00:00Z", year, month, days + 1)) == nil)
            #expect(RFC3339.date(from: String(format: "%04d-%02d-00T00:00:00Z", year, month)) == nil)
        }
    }

    @Test("The fast path reads UTC times from 1970 with up to three fractional digits to the same Date as date(from:), to the last bit, and nothing else")
    func fastPathAgrees() throws {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            let year = Int.random(in: 1970...9999, using: &generator), month = Int.random(in: 1...12, using: &generator)
            let day = Int.random(in: 1...28, using: &generator)
            var text = String(format: "%04d-%02d-%02dT%02d:%02d:%02d", year, month, day,
                              Int.random(in: 0...23, using: &generator), Int.random(in: 0...59, using: &generator), Int.random(in: 0...59, using: &generator))
            let digits = Int.random(in: 0...3, using: &generator)
            if digits > 0 { text += "." + String((0..<digits).map { _ in Character(String(Int.random(in: 0...9, using: &generator))) }) }
            text += "Z"
            let fast = try #require(RFC3339.utcDate(from: text), "\(text)")
            #expect(fast == RFC3339.date(from: text), "\(text)")
        }
        for text in [
            "2026-11-22T10:00:00+00:00", "2026-11-22t10:00:00z", "2026-11-22T10:00:00.1234Z", "1969-12-31T23:59:59Z",
            "2026-02-30T10:00:00Z", "2026-11-22T24:00:00Z", "2026-11-22T10:00:00.Z", "2026-11-22 10:00:00Z", "",
        ] {
            #expect(RFC3339.utcDate(from: text) == nil, "\(text)")
        }
    }

    @Test("A time or a day: a full-date is its first instant in UTC; anything else is read as a time")
    func timeOrDay() {
        #expect(RFC3339.date(fromTimeOrDay: "2026-11-20") == RFC3339.date(from: "2026-11-20T00:00:00Z"))
        #expect(RFC3339.date(fromTimeOrDay: "2026-11-20T10:00:00+01:00") == RFC3339.date(from: "2026-11-20T09:00:00Z"))
        for text in ["2026-02-30", "2026-11", "20261120", "2026-11-20T", ""] {
            #expect(RFC3339.date(fromTimeOrDay: text) == nil, "\(text)")
        }
    }
}
