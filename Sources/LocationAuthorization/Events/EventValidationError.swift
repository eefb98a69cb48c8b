/// Why an event as sent by a client cannot be read (SPEC §1, §5).
///
/// Missing and mistyped fields are the client's malformed request (400 `invalidRequest`); a value
/// outside the vocabulary, an unknown type or a bad id or length is a 422 `validationFailed`.
public struct EventValidationError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Kind: String, Sendable, Hashable {
        case missingField
        case wrongType
        case invalidValue
        case unknownType
        /// Not JSON at all (400 `malformedJSON`).
        case malformedJSON
    }

    public var kind: Kind
    /// The JSON path of the offending field, such as `data.request`.
    public var field: String
    public var message: String

    public init(_ kind: Kind, field: String, message: String) {
        self.kind = kind
        self.field = field
        self.message = message
    }

    /// Missing or mistyped (400) as opposed to outside the vocabulary (422).
    public var isMalformed: Bool { kind == .missingField || kind == .wrongType || kind == .malformedJSON }

    public var description: String { message }

    static func invalid(_ field: String, _ message: String) -> EventValidationError {
        EventValidationError(.invalidValue, field: field, message: "\(field): \(message)")
    }

    /// Turns Foundation's decoding error into the typed one, naming the field by its path.
    public init(_ error: DecodingError) {
        func path(_ codingPath: [any CodingKey], _ last: (any CodingKey)? = nil) -> String {
            let keys = codingPath + (last.map { [$0] } ?? [])
            var text = ""
            for key in keys {
                if let index = key.intValue {
                    text += "[\(index)]"
                } else {
                    text += text.isEmpty ? key.stringValue : "." + key.stringValue
                }
            }
            return text.isEmpty ? "body" : text
        }
        switch error {
        case .keyNotFound(let key, let context):
            let field = path(context.codingPath, key)
            self.init(.missingField, field: field, message: "\(field) is required")
        case .typeMismatch(let type, let context):
            let field = path(context.codingPath)
            self.init(.wrongType, field: field, message: "\(field) must be \(Self.typeName(type))")
        case .valueNotFound(let type, let context):
            let field = path(context.codingPath)
            self.init(.wrongType, field: field, message: "\(field) must be \(Self.typeName(type)), not null")
        case .dataCorrupted(let context):
            let field = path(context.codingPath)
            self.init(.wrongType, field: field, message: "\(field): \(Self.corruption(context.debugDescription))")
        @unknown default:
            self.init(.wrongType, field: "body", message: "the body does not match the expected shape")
        }
    }

    /// A JSON type in the API's terms (SPEC §14), never the implementation's: the decoder
    /// names the Swift type it expected (`Dictionary<String, Any>` for an object,
    /// `Array<Any>` for an array, `Double`, a struct of the API).
    static func typeName(_ type: Any.Type) -> String {
        switch type {
        case is String.Type, is Substring.Type: "a string"
        case is Bool.Type: "a boolean"
        case is Int.Type, is Int64.Type, is Int32.Type, is Int16.Type, is Int8.Type,
            is UInt.Type, is UInt64.Type, is UInt32.Type, is UInt16.Type, is UInt8.Type:
            "an integer"
        case is Double.Type, is Float.Type: "a number"
        case is [String].Type: "an array of strings"
        case let shaped where shaped is any JSONArrayShaped.Type: "an array"
        // A keyed container: a dictionary, or any struct of the API decoded from an object.
        default: "an object"
        }
    }

    /// The decoder's words for a value it could not take, in the API's terms: it names Swift
    /// types ("Cannot initialize Scope from invalid String value x", "Parsed JSON number <1e40>
    /// does not fit in Int64."). A description of the API's own (a custom decoder's) is kept.
    static func corruption(_ description: String) -> String {
        if description.hasPrefix("Cannot initialize") { return "not one of the accepted values" }
        if description.contains("does not fit in") || description.contains("not representable") {
            return "the number is out of range"
        }
        if description.contains("Swift") { return "not a valid value" }
        return description
    }
}

/// The collections a JSON array decodes to, so that `typeName` names them "an array" whatever
/// their element type.
protocol JSONArrayShaped {}
extension Array: JSONArrayShaped {}
extension ContiguousArray: JSONArrayShaped {}
extension Set: JSONArrayShaped {}
