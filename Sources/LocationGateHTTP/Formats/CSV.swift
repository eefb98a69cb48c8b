/// Every CSV the server writes: the analytics API's `text/csv` and `locgate analytics --format
/// csv` (`AnalyticsFormat.csv`), and the dashboard's CSV links (`DashboardTable.csv`).
///
/// Fields are quoted as RFC 4180 says: a field holding a comma, a double quote, a carriage
/// return or a line feed is written between double quotes, its quotes doubled; any other is
/// written as it is. Text that a spreadsheet would read as a formula (starting with `=`, `+`,
/// `-`, `@`, a tab or a carriage return: an `appVersion` of `=HYPERLINK(…)` is a client's to
/// choose) gets a leading apostrophe, as OWASP's CSV-injection advice says. Numbers are written
/// by the caller from their value and are only quoted.
public enum CSV {
    /// One field of a row.
    public enum Field: Sendable, Equatable {
        /// Text, neutralised for spreadsheets, then quoted.
        case text(String)
        /// A number as the caller wrote it (an empty one for no value), only quoted.
        case number(String)
    }

    /// How lines end: the dashboard's downloads end them with CRLF, as RFC 4180 has it; the
    /// analytics API and `locgate analytics` with LF, as their readers have always had them.
    public enum LineEnding: String, Sendable {
        case crlf = "\r\n"
        case lf = "\n"
    }

    /// A header row of column names (written as text), then the rows, every line ended.
    public static func write(header: [String], rows: [[Field]], lineEnding: LineEnding) -> String {
        var lines = [header.map { cell(.text($0)) }.joined(separator: ",")]
        lines.reserveCapacity(rows.count + 1)
        for row in rows {
            lines.append(row.map(cell).joined(separator: ","))
        }
        return lines.joined(separator: lineEnding.rawValue) + lineEnding.rawValue
    }

    /// One field as it is written between the commas.
    public static func cell(_ field: Field) -> String {
        switch field {
        case .text(let text):
            guard let first = text.unicodeScalars.first else { return text }
            return quoted(formulaStart.contains(first) ? "'" + text : text)
        case .number(let text):
            return quoted(text)
        }
    }

    private static let formulaStart: Set<Unicode.Scalar> = ["=", "+", "-", "@", "\t", "\r"]

    /// Quoted when it must be. Looked for as bytes, not characters: Swift reads CR LF as one
    /// character, equal to neither CR nor LF, and a field holding it must be quoted too.
    private static func quoted(_ text: String) -> String {
        guard text.utf8.contains(where: { $0 == UInt8(ascii: ",") || $0 == UInt8(ascii: "\"") || $0 == 0x0A || $0 == 0x0D })
        else { return text }
        var result = "\""
        for scalar in text.unicodeScalars {
            if scalar == "\"" { result += "\"\"" } else { result.unicodeScalars.append(scalar) }
        }
        return result + "\""
    }
}
