import Foundation
import Testing

@testable import LocationGateHTTP

/// The dashboard's one-decimal numbers are byte for byte the C library's `%.1f`.
@Suite("One-decimal numbers: the text of %.1f")
struct DecimalTextTests {
    @Test("Ties, near-ties, rates as percentages, coordinates, zero, negatives, huge and not finite: the same text as %.1f")
    func sameTextAsPrintf() {
        var values: [Double] = [
            0, 0.05, 0.15, 0.25, 0.35, 0.45, 0.95, 1.05, 2.675, 12.345, 99.95, 99.94999999999, 100, 1e-9, 123_456.75,
            -0.04, -0.05, -1.25, -12.3, 1e9, 1e15, 4.35, 0.1 + 0.2, 1.0 / 3.0, 2.0 / 3.0,
            .infinity, -.infinity, .nan, .ulpOfOne, .leastNonzeroMagnitude, .greatestFiniteMagnitude,
        ]
        // Rates as the tables show them: counts over counts, as percentages.
        for denominator in 1...200 {
            for numerator in stride(from: 0, through: denominator, by: max(1, denominator / 17)) {
                values.append(Double(numerator) / Double(denominator) * 100)
            }
        }
        // Coordinates: a chart's values rounded to tenths first, as `SVGChart.number` does.
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<5_000 {
            let value = Double.random(in: 0...2_000, using: &generator)
            values.append(value)
            values.append((value * 10).rounded() / 10)
        }
        for value in values {
            #expect(DecimalText.oneDecimal(value) == String(format: "%.1f", value), "\(value)")
        }
    }
}
