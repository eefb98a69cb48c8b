import Foundation

/// Numbers with one decimal as the dashboard writes them (a chart's coordinates, a rate's
/// percentage): the text of `String(format: "%.1f")`, which rounds the exact binary value, half
/// to even. Foundation's formatting was a sixth of the overview's time at ten million events
/// (hundreds of numbers a page); this writes the same text from integer arithmetic, and leaves
/// to Foundation what it cannot decide alone.
enum DecimalText {
    static func oneDecimal(_ value: Double) -> String {
        let scaled = value * 10
        let nearest = scaled.rounded()
        // Away from a tie, the rounded product has the C library's last digit: the product's
        // own error (under 1e-7 below 1e9) cannot cross a half. Near a tie, below zero ("-0.0"),
        // large or not finite, Foundation decides.
        guard value >= 0, scaled < 1e9, 0.5 - abs(scaled - nearest) > 1e-6 else {
            return String(format: "%.1f", value)
        }
        let tenths = Int64(nearest)
        return "\(tenths / 10).\(tenths % 10)"
    }
}
