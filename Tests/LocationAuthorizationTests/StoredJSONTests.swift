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

    /// Parsed JSON text; a failed test when it is not JSON.
    static func node(_ text: String) throws -> JSONNode {
        try #require(JSONNode.parse(text), "not JSON: \(text)")
    }

    /// What `JSONEncoder` writes for a value, parsed.
    static func codable(_ value: some Encodable) throws -> JSONNode {
        try Self.node(String(decoding: Self.encoder.encode(value), as: UTF8.self))
    }

    /// The `data` member of the Codable form of an event.
    static func codableData(_ event: LocationEvent) throws -> JSONNode {
        let whole = try Self.codable(event)
        return try #require(whole["data"], "no data in the Codable form of \(event): \(whole)")
    }

    /// Whether two JSON values are the same JSON, compared as `JSONNode`s: a boolean is not a
    /// number, `null` is not an absent member, arrays keep their order; only an object's
    /// members may come in another order (JSON objects are unordered, and the stored writers
    /// do not sort theirs).
    static func same(_ stored: JSONNode, _ codable: JSONNode) -> Bool {
        stored.inKeyOrder == codable.inKeyOrder
    }

    /// One event's stored `data` against the Codable form's: the same JSON, and each reader
    /// reads either back to the event. With `decoding`, `JSONDecoder` reads the stored form back
    /// too: it also checks the bounds on free text, so only for events valid as client input.
    static func expectSameForms(_ event: LocationEvent, decoding: Bool = false) throws {
        let written = event.dataJSON
        let stored = try Self.node(written)
        let codable = try Self.codableData(event)
        #expect(stored.hasUniqueKeys, "\(written)")
        #expect(Self.same(stored, codable), "\(event.type): stored \(written), Codable \(codable)")
        #expect(LocationEvent(storedType: event.type.rawValue, data: written) == event, "\(written)")
        #expect(LocationEvent(type: event.type, data: codable) == event, "the stored reader on the Codable form of \(event)")
        if decoding {
            let whole = #"{"type":"\#(event.type.rawValue)","data":\#(written)}"#
            #expect(try JSONDecoder().decode(LocationEvent.self, from: Data(whole.utf8)) == event, "\(whole)")
        }
    }

    /// One effect's stored form against the Codable form: the same JSON, and each reader reads
    /// either back to the effect.
    static func expectSameForms(_ effect: Effect) throws {
        var writer = JSONWriter()
        effect.write(to: &writer)
        let stored = try Self.node(writer.text)
        let codable = try Self.codable(effect)
        #expect(stored.hasUniqueKeys, "\(writer.text)")
        #expect(Self.same(stored, codable), "stored \(writer.text), Codable \(codable)")
        #expect(Effect(node: stored) == effect, "\(writer.text)")
        #expect(Effect(node: codable) == effect, "the stored reader on the Codable form of \(effect)")
        #expect(try JSONDecoder().decode(Effect.self, from: Data(writer.bytes)) == effect, "\(writer.text)")
    }

    /// One state's stored form against the Codable form. They differ in one member, on
    /// purpose: the state's own `installId` (`DeviceState.installID`, I1), which `JSONEncoder`
    /// writes and the stored form leaves out (`DeviceState.write`: the maintained counts group
    /// devices by the stored form, and the projection keeps the id in a column beside it). So
    /// the stored form, read back by either reader, is the state without it. True when the
    /// state had one (the difference was exercised).
    @discardableResult
    static func expectStoredState(_ state: DeviceState, after event: LocationEvent?) throws -> Bool {
        let written = state.storedJSON
        let stored = try Self.node(written)
        let codable = try Self.codable(state)
        // Described only when an expectation fails (comments are autoclosures).
        func step() -> String { event.map { "after \($0)" } ?? "at the start" }
        #expect(stored.hasUniqueKeys, "\(step()): \(written)")
        #expect(stored["installId"] == nil, "\(step()): \(written)")
        #expect(codable["installId"] == state.installID.map { JSONNode.string($0) }, "\(step()): \(codable)")
        #expect(Self.same(stored, codable.without("installId")), "\(step()): stored \(written), Codable \(codable)")
        var expected = state
        expected.installID = nil
        #expect(DeviceState(storedJSON: written) == expected, "\(step()): \(written)")
        #expect(try JSONDecoder().decode(DeviceState.self, from: Data(written.utf8)) == expected, "\(step()): \(written)")
        #expect(DeviceState(node: codable) == expected, "\(step()): the stored reader on the Codable form")
        return state.installID != nil
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
            try Self.expectSameForms(event)
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
            try Self.expectSameForms(event, decoding: true)
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
                #expect(state.installID == nil, "these sequences name no installation")
                try Self.expectStoredState(state, after: event)
                for effect in transition.effects {
                    try Self.expectSameForms(effect)
                }
            }
        }
    }

    @Test("Every event type, every sample: the stored data is JSONEncoder's, and the stored reader and JSONDecoder read it back to the event")
    func everyEventType() throws {
        for type in EventType.allCases {
            let samples = WireSamples.events(type)
            #expect(!samples.isEmpty, "no sample of \(type)")
            var members = Set<String>()
            for event in samples {
                #expect(event.type == type, "\(event) among the samples of \(type)")
                try Self.expectSameForms(event, decoding: true)
                let written = try Self.node(event.dataJSON)
                members.formUnion(written.members?.map(\.key) ?? [])
            }
            // Optional members present somewhere, so that they are compared too.
            #expect(members == Set(type.traits.dataFields), "\(type): the samples write \(members.sorted())")
        }
    }

    @Test("Every kind of effect, every sample: the stored form is JSONEncoder's, and both readers read it back to the effect")
    func everyEffectKind() throws {
        for kind in Effect.Kind.allCases {
            let samples = WireSamples.effects(kind)
            #expect(!samples.isEmpty, "no sample of \(kind)")
            for effect in samples {
                #expect(effect.kind == kind, "\(effect) among the samples of \(kind)")
                try Self.expectSameForms(effect)
            }
        }
        // The stored reader knows no kind beyond these.
        #expect(JSONNode.parse(#"{"kind": "nonsense", "reason": "reinstalled"}"#).flatMap(Effect.init(node:)) == nil)
    }

    @Test("Android and location-button device states: the stored form is JSONEncoder's but for the state's installId, and reads back equal without it")
    func androidStates() async {
        await propertyCheck(count: 200, input: scenarioInput) { numbers in
            let android = AndroidScenario(numbers)
            let button = ButtonScenario(numbers)
            for (start, events) in [(android.start, android.events), (button.start, button.events)] {
                var state = start
                try Self.expectStoredState(state, after: nil)
                for event in events {
                    guard let transition = try? state.reduce(event) else { continue }
                    state = transition.state
                    try Self.expectStoredState(state, after: event)
                    for effect in transition.effects {
                        try Self.expectSameForms(effect)
                    }
                }
            }
        }
    }

    @Test("States reached with every sample event on each family, from a context with an installId: stored as JSONEncoder writes them but for it")
    func sampleStates() throws {
        let starts = [
            DeviceContext(platform: .iOS, osVersion: OSVersion(18, 0), installID: "install-1"),
            DeviceContext(platform: .android, apiLevel: 37, targetSdk: 37, declaredPermissions: [.coarse, .fine, .background, .locationButton],
                          installID: "install-1"),
        ]
        for start in starts {
            var state = DeviceState()
            _ = try state.apply(.contextReported(start))
            #expect(state.family == start.family && state.installID == "install-1")
            var checked = 0
            var withInstallation = 0
            for event in WireSamples.allEvents {
                guard let transition = try? state.reduce(event) else { continue }
                state = transition.state
                checked += 1
                if try Self.expectStoredState(state, after: event) { withInstallation += 1 }
                for effect in transition.effects {
                    try Self.expectSameForms(effect)
                }
            }
            #expect(checked > 20 && withInstallation == checked, "\(start.family): \(checked) states, \(withInstallation) with an installId")
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

extension JSONNode {
    /// An object without the member `key`.
    fileprivate func without(_ key: String) -> JSONNode {
        guard case .object(let members) = self else { return self }
        return .object(members.filter { $0.key != key })
    }
}
