import Foundation

/// JSON decoding of client input with typed errors: every failure is an `EventValidationError`
/// naming the field, never a trap and never Foundation's untyped error.
public enum EventCoding {
    /// Decodes a value, translating decoding failures.
    public static func decode<Value: Decodable>(_ type: Value.Type, from data: Data) throws(EventValidationError) -> Value {
        do {
            return try JSONDecoder().decode(type, from: data)
        } catch let error as EventValidationError {
            throw error
        } catch let error as DecodingError {
            if case .dataCorrupted(let context) = error, context.codingPath.isEmpty {
                throw EventValidationError(.malformedJSON, field: "body", message: "the body is not valid JSON")
            }
            throw EventValidationError(error)
        } catch {
            throw EventValidationError(.malformedJSON, field: "body", message: "the body is not valid JSON")
        }
    }

    /// Decodes one `{"type", "data"}` event from JSON text.
    public static func decodeEvent(_ json: String) throws(EventValidationError) -> LocationEvent {
        try decode(LocationEvent.self, from: Data(json.utf8))
    }
}
