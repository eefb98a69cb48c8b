/// The proleptic Gregorian calendar as a count of days from 1970-01-01, Howard Hinnant's
/// `days_from_civil` and `civil_from_days`: the one home of the arithmetic that the two
/// hand-written time readers share, RFC 3339 in the domain (`RFC3339.utcDate(from:)`) and
/// PostgreSQL's `timestamptz` text in the database client (`PostgresTimestamp`). It lives in
/// this module because it is the one both can import: the database client depends on nothing
/// of the domain, and the domain nothing of the database. Inlinable, as it was when each reader
/// had its own copy: both run for every event of a batch.
public enum CivilCalendar {
    /// Days from 1970-01-01 to `year`-`month`-`day` (`month` 1-12; negative before 1970).
    @inlinable
    public static func daysSinceEpoch(year: Int64, month: Int64, day: Int64) -> Int64 {
        let shifted = month <= 2 ? year - 1 : year
        let era = floorDiv(shifted, 400)
        let yearOfEra = shifted - era * 400
        let dayOfYear = (153 * ((month + 9) % 12) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The date `days` after 1970-01-01 (before it when negative): `daysSinceEpoch`'s inverse.
    @inlinable
    public static func civilDate(daysSinceEpoch days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let shifted = days + 719_468
        let era = floorDiv(shifted, 146_097)
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    /// `a / b` rounded toward negative infinity (`b` > 0).
    @usableFromInline
    static func floorDiv(_ a: Int64, _ b: Int64) -> Int64 {
        a >= 0 ? a / b : (a - b + 1) / b
    }
}
