/// The dashboard's own addresses built from values: its CSV links' query strings and the device
/// page's path. Every byte but the unreserved ones of RFC 3986 is percent-encoded.
enum PercentEncoding {
    /// A query string from name/value pairs, each percent-encoded.
    static func query(_ items: [(String, String)]) -> String {
        items.map { "\(encode($0.0))=\(encode($0.1))" }.joined(separator: "&")
    }

    /// A path segment, percent-encoded.
    static func segment(_ text: String) -> String {
        encode(text)
    }

    private static let unreserved = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~".utf8)
    private static let hexDigits = Array("0123456789ABCDEF".unicodeScalars)

    private static func encode(_ text: String) -> String {
        var result = ""
        for byte in text.utf8 {
            if unreserved.contains(byte) {
                result.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                result.unicodeScalars.append("%")
                result.unicodeScalars.append(hexDigits[Int(byte >> 4)])
                result.unicodeScalars.append(hexDigits[Int(byte & 0x0F)])
            }
        }
        return result
    }
}
