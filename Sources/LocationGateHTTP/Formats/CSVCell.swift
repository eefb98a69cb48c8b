import Foundation

/// One cell of every CSV the server writes (the analytics API's `text/csv`, `locgate analytics
/// --csv`, the dashboard's CSV links): RFC 4180 quoting, and text neutralised for spreadsheets.
/// Text that a spreadsheet would read as a formula (starting with `=`, `+`, `-`, `@`, a tab or a
/// carriage return: an `appVersion` of `=HYPERLINK(…)` is a client's to choose) gets a leading
/// apostrophe, as OWASP's CSV-injection advice says. Numbers are written by the caller from
/// their value and go through `number`, which only quotes.
public enum CSVCell {
    public static func text(_ text: String) -> String {
        guard let first = text.unicodeScalars.first else { return text }
        let formulaStart: Set<Unicode.Scalar> = ["=", "+", "-", "@", "\t", "\r"]
        return quoted(formulaStart.contains(first) ? "'" + text : text)
    }

    public static func number(_ text: String) -> String { quoted(text) }

    private static func quoted(_ text: String) -> String {
        guard text.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return text }
        return "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}
