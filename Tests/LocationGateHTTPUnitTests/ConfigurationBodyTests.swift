import Foundation
import HTTPTypes
import LocationGateService
import Testing

@testable import LocationGateHTTP

/// SPEC §14 "Strict input": a configuration body (apps, keys, retention, gate queries) with a
/// field the API does not define is a 422 `validationFailed` naming it; what is well formed
/// decodes as before, and the decoder's errors speak the API's terms.
@Suite("HTTP: configuration bodies are read strictly", .timeLimit(.minutes(1)))
struct ConfigurationBodyTests {
    struct App: Decodable { var name: String }
    struct Key: Decodable { var scope: String; var deviceBound: Bool? }
    struct Query: Decodable {
        struct Device: Decodable { var userId: String; var deviceId: String }
        var devices: [Device]
        var features: [String]?
    }

    private static func refusal<Value: Decodable>(
        _ type: Value.Type, _ json: String, _ shape: ConfigurationBody.Shape
    ) -> APIError? {
        do throws(APIError) {
            _ = try ConfigurationBody.decode(type, from: Data(json.utf8), shape: shape)
            return nil
        } catch {
            return error
        }
    }

    @Test("Bodies with only their own fields decode as before")
    func known() throws {
        #expect(try ConfigurationBody.decode(App.self, from: Data(#"{"name": "Trips"}"#.utf8), shape: ConfigurationBody.app).name == "Trips")
        let key = try ConfigurationBody.decode(Key.self, from: Data(#"{"scope": "ingest", "deviceBound": true}"#.utf8), shape: ConfigurationBody.key)
        #expect(key.scope == "ingest" && key.deviceBound == true)
        let flat = try ConfigurationBody.decode(Key.self, from: Data(#"{"scope": "read"}"#.utf8), fields: ["scope", "deviceBound"])
        #expect(flat.scope == "read" && flat.deviceBound == nil)
        let query = try ConfigurationBody.decode(
            Query.self, from: Data(#"{"devices": [{"userId": "u", "deviceId": "d"}], "features": ["nearby"]}"#.utf8),
            shape: ConfigurationBody.gateQuery)
        #expect(query.devices.count == 1 && query.features == ["nearby"])
    }

    @Test("A field the body does not define is a 422 validationFailed naming it, nested ones with the device's index")
    func unknownFields() {
        let app = Self.refusal(App.self, #"{"name": "Trips", "color": "blue"}"#, ConfigurationBody.app)
        #expect(app?.error.code == .validationFailed && app?.status == .unprocessableContent)
        #expect(app?.error.message.hasPrefix("color:") == true, "\(app?.error.message ?? "")")
        #expect(app?.error.index == nil)
        // Unknown even when null, and even when the known fields are wrong too.
        #expect(Self.refusal(Key.self, #"{"scope": "read", "expires": null}"#, ConfigurationBody.key)?.error.message.hasPrefix("expires:") == true)
        #expect(Self.refusal(App.self, #"{"nmae": "Trips"}"#, ConfigurationBody.app)?.error.code == .validationFailed)
        #expect(Self.refusal(Key.self, #"{"days": 3, "scope": "read"}"#, ConfigurationBody.retention)?.error.message.hasPrefix("scope:") == true)
        let device = Self.refusal(
            Query.self, #"{"devices": [{"userId": "u", "deviceId": "d"}, {"userId": "u", "deviceId": "e", "os": "iOS"}]}"#,
            ConfigurationBody.gateQuery)
        #expect(device?.error.code == .validationFailed && device?.error.index == 1)
        #expect(device?.error.message.hasPrefix("devices[1].os:") == true, "\(device?.error.message ?? "")")
        let top = Self.refusal(Query.self, #"{"devices": [], "limit": 5}"#, ConfigurationBody.gateQuery)
        #expect(top?.error.message.hasPrefix("limit:") == true && top?.error.index == nil)
    }

    @Test("Not JSON is 400 malformedJSON; a field twice is 400 invalidRequest; a mistyped one speaks the API's terms")
    func otherRefusals() {
        #expect(Self.refusal(App.self, "{", ConfigurationBody.app)?.error.code == .malformedJSON)
        #expect(Self.refusal(App.self, "", ConfigurationBody.app)?.error.code == .malformedJSON)
        let twice = Self.refusal(App.self, #"{"name": "a", "name": "b"}"#, ConfigurationBody.app)
        #expect(twice?.error.code == .invalidRequest && twice?.error.message.hasPrefix("name:") == true)
        let notObject = Self.refusal(App.self, "[]", ConfigurationBody.app)
        #expect(notObject?.error.code == .invalidRequest)
        #expect(notObject?.error.message.contains("an object") == true, "\(notObject?.error.message ?? "")")
        let devices = Self.refusal(Query.self, #"{"devices": {"userId": "u"}}"#, ConfigurationBody.gateQuery)
        #expect(devices?.error.code == .invalidRequest)
        #expect(devices?.error.message == "devices must be an array", "\(devices?.error.message ?? "")")
        let missing = Self.refusal(App.self, "{}", ConfigurationBody.app)
        #expect(missing?.error.code == .invalidRequest && missing?.error.message == "name is required")
        for refusal in [notObject, devices] {
            let message = refusal?.error.message ?? ""
            #expect(!message.contains("Array<") && !message.contains("Dictionary<") && !message.contains("Swift"), "\(message)")
        }
    }
}
