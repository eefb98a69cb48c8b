import Foundation
import Hummingbird
import LocationGateService

/// A form's fields as a browser sends them (`application/x-www-form-urlencoded`: a POST's body,
/// or the query of a form sent with GET), decoded by Hummingbird's `URLEncodedFormDecoder` and
/// read as strictly as the API reads a body (SPEC §14): a field the form does not have is
/// refused (422 `validationFailed`), one sent twice (400 `invalidRequest`) and one whose
/// encoding is broken (400) too, naming the field, so that nothing is saved from a form the
/// page did not send. The page shows the refusal.
struct DashboardForm: Sendable {
    /// The fields sent, each once.
    private let fields: [String: String]

    /// The fields of `text`, each one of `allowed`.
    init(_ text: String, allowed: Set<String>) throws(ServiceError) {
        // A field without `=` is a field with an empty value, as browsers read it (the decoder
        // would skip it, and a field the form does not have must be refused).
        let pairs = text.split(separator: "&").map { $0.contains("=") ? String($0) : $0 + "=" }
        let fields: [String: String]
        do {
            fields = try URLEncodedFormDecoder().decode([String: String].self, from: pairs.joined(separator: "&"))
        } catch let error as URLEncodedFormError where error.code == .duplicateKeys {
            throw ServiceError(.invalidRequest, "\(error.value.prefix(64)): given twice; a form sends each field once")
        } catch let error as URLEncodedFormError {
            throw ServiceError(.invalidRequest, "\(error.value.prefix(64)): not encoded as a form encodes its fields")
        } catch {
            // A field named as a nested one (`a[b]=`): not a field of any of the dashboard's forms.
            throw ServiceError(.invalidRequest, "the form is not encoded as the dashboard's forms are")
        }
        if let unknown = fields.keys.filter({ !allowed.contains($0) }).min() {
            throw ServiceError(.validationFailed, "\(unknown.prefix(64)): not a field of this form")
        }
        self.fields = fields
    }

    /// The value of `name`, or nil when it was not sent.
    subscript(_ name: String) -> String? { fields[name] }
}
