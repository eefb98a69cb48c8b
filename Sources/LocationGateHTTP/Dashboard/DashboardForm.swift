import Foundation
import LocationGateService

/// A form's fields as a browser sends them (`application/x-www-form-urlencoded`: a POST's body,
/// or the query of a form sent with GET), read as strictly as the API reads a body (SPEC §14):
/// a field the form does not have is refused (422 `validationFailed`), one sent twice (400
/// `invalidRequest`) and one whose encoding is broken (400) too, naming the field, so that
/// nothing is saved from a form the page did not send. The page shows the refusal.
struct DashboardForm: Sendable {
    /// The fields in the order sent, each once.
    let fields: [(name: String, value: String)]

    /// The fields of `text`, each one of `allowed`.
    init(_ text: String, allowed: Set<String>) throws(ServiceError) {
        var fields: [(name: String, value: String)] = []
        var seen = Set<String>()
        for pair in text.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let rawName = parts.first ?? pair
            guard let name = Self.decoded(rawName), let value = parts.count == 2 ? Self.decoded(parts[1]) : "" else {
                throw ServiceError(.invalidRequest, "\(rawName.prefix(64)): not encoded as a form encodes its fields")
            }
            guard allowed.contains(name) else {
                throw ServiceError(.validationFailed, "\(name.prefix(64)): not a field of this form")
            }
            guard seen.insert(name).inserted else {
                throw ServiceError(.invalidRequest, "\(name.prefix(64)): given twice; a form sends each field once")
            }
            fields.append((name: name, value: value))
        }
        self.fields = fields
    }

    /// The value of `name`, or nil when it was not sent.
    subscript(_ name: String) -> String? {
        fields.first { $0.name == name }?.value
    }

    /// A name or value as the form encodes it: `+` for a space, the rest percent-encoded.
    private static func decoded(_ text: Substring) -> String? {
        String(text).replacingOccurrences(of: "+", with: " ").removingPercentEncoding
    }
}
