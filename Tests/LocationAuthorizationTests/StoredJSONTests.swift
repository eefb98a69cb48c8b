import Foundation
import LocationGateJSON
import PropertyBased
import Testing

@testable import LocationAuthorization

/// The hand-written stored forms must be the `Codable` forms: what one writes, the other reads.
@Suite("Stored JSON: JSONWriter and JSONNode against Codable", .timeLimit(.minutes(1)))
struct StoredJSONTests {
    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    static func object(_ text: String) throws -> NSDictionary? {
        try JSONSerialization.jsonObject(with: Data(text.utf8)) as? NSDictionary
    }

    /// The `data` member of the Codable form of an event.
    static func codableData(_ event: LocationEvent) throws -> NSDictionary? {
        try (object(String(decoding: encoder.encode(event), as: UTF8.self)))?["data"] as? NSDictionary
    }

    static let contexts: [DeviceContext] = [
        DeviceContext(),
        DeviceContext(platform: .iOS, osVersion: OSVersion(17, 4), appVersion: "5.2 \"beta\" \\ \u{1}/é😀",
                      usageDescriptions: [UsageDescriptionKey.whenInUse, UsageDescriptionKey.always],
                      temporaryUsagePurposeKeys: ["Nav", "Tab\tbed"], defaultAccuracyReduced: true),
        DeviceContext(platform: .macOS, osVersion: OSVersion(13, 3, 1), usageDescriptions: [], temporaryUsagePurposeKeys: []),
        DeviceContext(platform: .iOS, osVersion: OSVersion(18, 1), requireExplicitServiceSession: true, backgroundLocationMode: false),
    ]

    @Test("Every kind of event: the data written is Codable's, and reads back to the event")
    func events() throws {
        var events = (0..<1000).map(Scenario.event) + (0..<1000).map(SessionScenario.event)
        events += Self.contexts.map(LocationEvent.contextReported)
        events.append(.authorizationRequested(.temporaryFullAccuracy("Purpose \"x\"")))
        for event in events {
            let written = event.dataJSON
            #expect(try Self.object(written) == Self.codableData(event), "\(written)")
            #expect(LocationEvent(storedType: event.type.rawValue, data: written) == event, "\(written)")
            let codable = try JSONSerialization.data(withJSONObject: Self.codableData(event) ?? [:])
            #expect(LocationEvent(storedType: event.type.rawValue, data: String(decoding: codable, as: UTF8.self)) == event)
        }
    }

    @Test("The location button's events and context (SPEC §12): the data written is Codable's, and reads back to the event")
    func locationButtonEvents() throws {
        var events: [LocationEvent] = [
            .locationButtonSession(.opened), .locationButtonSession(.closed), .locationButtonSession(.failed),
            .locationButtonSession(.failed, cause: "java.lang.SecurityException"), .locationButtonSession(.failed, cause: "Outer$Inner-2"),
            .locationButtonResult(granted: true), .locationButtonResult(granted: false),
            .contextReported(DeviceContext(platform: .android, apiLevel: 37, targetSdk: 37,
                                           declaredPermissions: [.coarse, .fine, .locationButton], fineOnlyForLocationButton: true)),
            .contextReported(DeviceContext(fineOnlyForLocationButton: false)),
        ]
        events += (0..<400).map(ButtonScenario.event)
        for event in events {
            let written = event.dataJSON
            #expect(try Self.object(written) == Self.codableData(event), "\(written)")
            #expect(LocationEvent(storedType: event.type.rawValue, data: written) == event, "\(written)")
            let codable = try JSONSerialization.data(withJSONObject: Self.codableData(event) ?? [:])
            #expect(LocationEvent(storedType: event.type.rawValue, data: String(decoding: codable, as: UTF8.self)) == event)
            #expect(try EventCoding.decode(LocationEvent.self, from: JSONEncoder().encode(event)) == event)
        }
        // Forms this code does not write: a cause where there was no error, an unknown state.
        #expect(LocationEvent(storedType: "locationButtonSession", data: #"{"state": "opened", "cause": "X"}"#) == nil)
        #expect(LocationEvent(storedType: "locationButtonSession", data: #"{"state": "paused"}"#) == nil)
        #expect(LocationEvent(storedType: "locationButtonResult", data: #"{"granted": 1}"#) == nil)
    }

    @Test("Random device states: written as Codable writes them, read back equal")
    func states() async {
        await propertyCheck(count: 300, input: scenarioInput) { numbers in
            let scenario = Scenario(numbers)
            let sessions = SessionScenario(numbers)
            var state = scenario.start
            for event in scenario.events + sessions.events {
                guard let transition = try? state.reduce(event) else { continue }
                state = transition.state
                let written = state.storedJSON
                let codable = try? Self.object(String(decoding: Self.encoder.encode(state), as: UTF8.self))
                #expect(codable != nil && (try? Self.object(written)) == codable, "\(written)")
                #expect(DeviceState(storedJSON: written) == state)
                #expect((try? JSONDecoder().decode(DeviceState.self, from: Data(written.utf8))) == state)
                for effect in transition.effects {
                    var writer = JSONWriter()
                    effect.write(to: &writer)
                    #expect((try? JSONDecoder().decode(Effect.self, from: Data(writer.bytes))) == effect)
                    #expect(JSONNode.parse(writer.text).flatMap(Effect.init(node:)) == effect)
                }
            }
        }
    }

    @Test("Forms this code does not write read as nil, for the Codable fallback to explain")
    func foreignForms() {
        #expect(LocationEvent(storedType: "promptResponded", data: #"{"choice": "maybe"}"#) == nil)
        #expect(LocationEvent(storedType: "noSuchType", data: "{}") == nil)
        #expect(LocationEvent(storedType: "settingsChanged", data: "{}") == nil)
        #expect(LocationEvent(storedType: "statusObserved", data: #"{"status": "authorized", "accuracy": 3}"#) == nil)
        #expect(LocationEvent(storedType: "statusObserved", data: #"{"status": "authorized"}"#) == .statusObserved(.authorizedAlways, accuracy: nil))
        #expect(DeviceState(storedJSON: #"{"authorization": "denied"}"#) == nil)
        #expect(DeviceState(storedJSON: "not json") == nil)
    }

    @Test("A string is written with the bytes JSONEncoder gives it, whether it needs an escape or not")
    func strings() throws {
        let texts = ["", "nearby", "user-42", "é😀 plain", "a/b", "quote \" here", "back\\slash", "line\nbreak",
                     "tab\tand\r\u{8}\u{c}", "\u{1}\u{1f}", String(repeating: "x", count: 300) + "\"", String(repeating: "long plain text ", count: 40)]
        for text in texts {
            var writer = JSONWriter()
            writer.string(text)
            #expect(writer.text == String(decoding: try Self.encoder.encode(text), as: UTF8.self), "\(text.debugDescription)")
        }
    }

    @Test("JSONNode parses JSON's escapes, numbers and whitespace, and refuses malformed text")
    func parser() {
        #expect(JSONNode.parse(#" { "a" : [ 1 , -2.5e1 , true , false , null ] , "b" : "x\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00" } "#)
            == .object([
                .init(key: "a", value: .array([.number(1), .number(-25), .bool(true), .bool(false), .null])),
                .init(key: "b", value: .string("x\"\\/\u{8}\u{c}\n\r\té😀")),
            ]))
        #expect(JSONNode.parse("[]") == .array([]))
        #expect(JSONNode.parse("{}") == .object([]))
        #expect(JSONNode.parse("12345678901234567890") == .number(12345678901234567890))
        for bad in ["", "{", "[1,]", #"{"a" 1}"#, #"{"a":1,}"#, "tru", "\"abc", "\"\\ud800\"", "1 2", "\"\u{1}\"", "-", "{\"a\":}"] {
            #expect(JSONNode.parse(bad) == nil, "\(bad)")
        }
    }
}
