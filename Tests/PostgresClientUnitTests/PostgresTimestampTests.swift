import Foundation
import PostgresClient
import Testing

/// `PostgresTimestamp.format` runs for every event and rollup key: it must never trap, whatever
/// `Date` reaches it (callers refuse times outside SPEC §1's range; this is the last line).
@Suite("PostgresTimestamp", .timeLimit(.minutes(1)))
struct PostgresTimestampTests {
    @Test("Inside years 1-9999 format and parse round-trip (to a Double's precision)")
    func roundTrip() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<10_000 {
            let seconds = Double(Int64.random(in: -62_135_596_800...253_402_300_799, using: &generator))
            let micros = Double(Int.random(in: 0..<1_000_000, using: &generator)) / 1_000_000
            let date = Date(timeIntervalSince1970: seconds + micros)
            let text = PostgresTimestamp.format(date)
            let back = PostgresTimestamp.parse(text)
            #expect(back.map { abs($0.timeIntervalSince1970 - date.timeIntervalSince1970) < 0.000_1 } == true, "\(text) \(date.timeIntervalSince1970) \(back?.timeIntervalSince1970 ?? 0)")
        }
    }

    @Test("Any Date formats to a four-digit year without trapping; outside the range it is clamped")
    func neverTraps() {
        let extremes: [Double] = [
            -1e300, -62_135_596_801, -62_167_219_200, 253_402_300_800, 1e18, 1e300, .infinity, -.infinity, .nan,
            .greatestFiniteMagnitude, -.greatestFiniteMagnitude,
        ]
        for seconds in extremes {
            let text = PostgresTimestamp.format(Date(timeIntervalSince1970: seconds))
            #expect(text.utf8.count == 27, "\(seconds): \(text)")
            let year = Int(text.prefix(4)) ?? -1
            #expect((1...9999).contains(year), "\(seconds): \(text)")
        }
        #expect(PostgresTimestamp.format(Date(timeIntervalSince1970: -1e300)).hasPrefix("0001-01-01T00:00:00"))
        #expect(PostgresTimestamp.format(Date(timeIntervalSince1970: 1e300)).hasPrefix("9999-12-31T23:59:59"))
    }
}
