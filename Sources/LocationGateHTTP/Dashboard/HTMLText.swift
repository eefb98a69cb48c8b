/// Text made safe to write into markup: the one escaping of the dashboard's own markup (the
/// charts' SVG, a table's rows). The templates' `{{ }}` escape with Mustache's own.
enum HTMLText {
    /// Text as element text or a quoted attribute's value: the five characters that could end
    /// either, looked for as scalars (a quote followed by a combining mark is one `Character`,
    /// yet it still ends an attribute).
    static func escape(_ text: String) -> String {
        var escaped = ""
        escaped.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "\"": escaped += "&quot;"
            case "'": escaped += "&#39;"
            default: escaped.unicodeScalars.append(scalar)
            }
        }
        return escaped
    }
}
