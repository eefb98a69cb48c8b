/// Text made safe to write into markup: the one escaping of the dashboard's own markup (the
/// charts' SVG, a table's rows). The templates' `{{ }}` escape with Mustache's own.
enum HTMLText {
    /// Text as element text or a quoted attribute's value: the five characters that could end
    /// either. They are ASCII, and in UTF-8 no byte of another character is ASCII, so they are
    /// looked for as bytes: a quote followed by a combining mark (one `Character`) still has
    /// its quote replaced. Text without any (most of a page's) is returned as it is.
    static func escape(_ text: String) -> String {
        func special(_ byte: UInt8) -> Bool {
            byte == UInt8(ascii: "&") || byte == UInt8(ascii: "<") || byte == UInt8(ascii: ">")
                || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "'")
        }
        guard text.utf8.contains(where: special) else { return text }
        var escaped: [UInt8] = []
        escaped.reserveCapacity(text.utf8.count + 16)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "&"): escaped.append(contentsOf: "&amp;".utf8)
            case UInt8(ascii: "<"): escaped.append(contentsOf: "&lt;".utf8)
            case UInt8(ascii: ">"): escaped.append(contentsOf: "&gt;".utf8)
            case UInt8(ascii: "\""): escaped.append(contentsOf: "&quot;".utf8)
            case UInt8(ascii: "'"): escaped.append(contentsOf: "&#39;".utf8)
            default: escaped.append(byte)
            }
        }
        return String(decoding: escaped, as: UTF8.self)
    }
}
