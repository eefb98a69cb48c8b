import Foundation
import Testing

@testable import LocationAuthorization

/// SPEC §14: error messages speak the API's terms (`an array`, `an object`, `a string`,
/// `a number`, `a boolean`), never the implementation's types (`Array<Any>`,
/// `Dictionary<String, Any>`, `Int64`, a struct's name).
@Suite("Decoding errors in the API's terms", .timeLimit(.minutes(1)))
struct DecodingMessageTests {
    struct Body: Decodable {
        struct Device: Decodable { var userId: String }
        enum Scope: String, Decodable { case read, admin }
        var devices: [Device]?
        var features: [String]?
        var flags: [String: Bool]?
        var device: Device?
        var name: String?
        var count: Int?
        var ratio: Double?
        var enabled: Bool?
        var scope: Scope?
    }

    private static func message(_ json: String) -> String {
        do throws(EventValidationError) {
            _ = try EventCoding.decode(Body.self, from: Data(json.utf8))
            return "accepted"
        } catch {
            return error.message
        }
    }

    @Test("Each JSON type is named as the API names it")
    func typeNames() {
        let cases: [(String, String)] = [
            (#"{"devices": {}}"#, "devices must be an array"),
            (#"{"devices": "all"}"#, "devices must be an array"),
            (#"{"devices": [3]}"#, "devices[0] must be an object"),
            (#"{"flags": []}"#, "flags must be an object"),
            (#"{"device": "d-7"}"#, "device must be an object"),
            (#"{"name": 5}"#, "name must be a string"),
            (#"{"count": "five"}"#, "count must be an integer"),
            (#"{"ratio": true}"#, "ratio must be a number"),
            (#"{"enabled": "yes"}"#, "enabled must be a boolean"),
            (#"{"name": null, "devices": null, "device": {"userId": null}}"#, "device.userId must be a string, not null"),
            ("[]", "body must be an object"),
        ]
        for (json, expected) in cases {
            #expect(Self.message(json) == expected, "\(json)")
        }
        // An array of strings may be named as such, or as an array.
        #expect(Self.message(#"{"features": "nearby"}"#).hasPrefix("features must be an array"))
    }

    @Test("Values the decoder cannot take are described without Swift's names")
    func values() {
        for json in [#"{"scope": "owner"}"#, #"{"count": 1e40}"#, #"{"count": 12345678901234567890123}"#] {
            let message = Self.message(json)
            #expect(message != "accepted", "\(json)")
            for word in ["Array<", "Dictionary<", "Int64", "Swift", "Scope", "Cannot initialize"] {
                #expect(!message.contains(word), "\(json): \(message)")
            }
        }
        #expect(Self.message(#"{"scope": "owner"}"#) == "scope: not one of the accepted values")
    }
}
