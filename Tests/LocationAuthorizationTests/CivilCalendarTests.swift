import Foundation
import LocationGateJSON
import Testing

/// The day count that RFC 3339's fast reader and PostgreSQL's timestamps share agrees with
/// Foundation's Gregorian calendar where that one is Gregorian (from 1583), and its two
/// directions are each other's inverse.
@Suite("CivilCalendar: days from 1970-01-01", .timeLimit(.minutes(1)))
struct CivilCalendarTests {
    @Test("Known days, leap days and the ends of the four-digit years")
    func knownDays() {
        #expect(CivilCalendar.daysSinceEpoch(year: 1970, month: 1, day: 1) == 0)
        #expect(CivilCalendar.daysSinceEpoch(year: 1969, month: 12, day: 31) == -1)
        #expect(CivilCalendar.daysSinceEpoch(year: 2000, month: 2, day: 29) == 11_016)
        #expect(CivilCalendar.daysSinceEpoch(year: 2000, month: 3, day: 1) == 11_017)
        #expect(CivilCalendar.daysSinceEpoch(year: 1, month: 1, day: 1) == -719_162)
        #expect(CivilCalendar.daysSinceEpoch(year: 9999, month: 12, day: 31) == 2_932_896)
        let first = CivilCalendar.civilDate(daysSinceEpoch: -719_162), last = CivilCalendar.civilDate(daysSinceEpoch: 2_932_896)
        #expect(first.year == 1 && first.month == 1 && first.day == 1)
        #expect(last.year == 9999 && last.month == 12 && last.day == 31)
    }

    @Test("Random days of years 1-9999 round-trip; from 1583 they agree with Foundation's calendar")
    func agreesWithFoundation() {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC") ?? .current
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            let days = Int64.random(in: -719_162...2_932_896, using: &generator)
            let (year, month, day) = CivilCalendar.civilDate(daysSinceEpoch: days)
            #expect(CivilCalendar.daysSinceEpoch(year: year, month: month, day: day) == days, "\(days)")
            // Foundation's Gregorian calendar is Julian before October 1582; ours is proleptic.
            guard year >= 1583 else { continue }
            let parts = calendar.dateComponents([.year, .month, .day], from: Date(timeIntervalSince1970: Double(days) * 86_400))
            #expect(parts.year == Int(year) && parts.month == Int(month) && parts.day == Int(day),
                    "\(days): \(year)-\(month)-\(day), Foundation \(parts)")
        }
    }
}
