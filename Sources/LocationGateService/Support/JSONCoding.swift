import Foundation

/// `Codable` JSON text for the database: feature definitions (a client's input, kept in the
/// form it was checked in), and the fallback of the stored forms' hand-written readers
/// (`JSONText.outcome`, `.state`, `.event`), which says what is wrong with a text they refuse.
enum JSONText {
    static func encode(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    static func decode<Value: Decodable>(_ type: Value.Type, _ text: String) throws -> Value {
        try JSONDecoder().decode(type, from: Data(text.utf8))
    }
}
