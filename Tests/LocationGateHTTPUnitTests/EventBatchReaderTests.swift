import Foundation
import LocationAuthorization
import LocationGateJSON
import LocationGateSimulation
import Testing

@testable import LocationGateService
@testable import LocationGateHTTP

/// `POST /v1/events` bodies are read by hand when they are plain, and by `JSONDecoder` otherwise
/// (`EventBatch.read`): these tests hold the two readers to the same answers.
@Suite("Event batch reader: the hand-written reader answers as JSONDecoder does", .timeLimit(.minutes(1)))
struct EventBatchReaderTests {
    private func codable(_ body: String) -> [EventSubmission]? {
        try? EventBatch.decodeWithCodable(Data(body.utf8))
    }

    private func read(_ body: String) -> [EventSubmission]? {
        EventBatch.read(Data(body.utf8))
    }

    /// Bodies of simulated devices' events, as clients write them (`JSONEncoder`, the SPEC's form).
    private func simulatedBodies(count: Int) throws -> [String] {
        let simulator = PopulationSimulator(seed: 5)
        let encoder = JSONEncoder()
        var bodies: [String] = []
        var index = 0
        while bodies.count < count {
            let submissions = simulator.device(index)
            index += 1
            for chunk in stride(from: 0, to: submissions.count, by: 3) {
                let slice = Array(submissions[chunk..<min(chunk + 3, submissions.count)])
                struct Body: Encodable { var events: [EventSubmission] }
                bodies.append(String(decoding: try encoder.encode(Body(events: slice)), as: UTF8.self))
            }
        }
        return bodies
    }

    @Test("Simulated clients' bodies: read by hand unless they carry free text, and equal to JSONDecoder's reading")
    func simulatedBodies() throws {
        var readByHand = 0
        for body in try simulatedBodies(count: 600) {
            let expected = try #require(codable(body), "JSONDecoder refused \(body)")
            let events = expected.map(\.event)
            // What the types' traits leave to JSONDecoder (`EventTraits.reading`).
            let hasFreeText = events.contains { event in
                var writer = JSONWriter()
                event.writeData(to: &writer)
                let data = JSONNode.parse(writer.text)
                return !event.type.traits.readsByHand(has: { data?[$0] != nil })
            }
            if let byHand = read(body) {
                #expect(byHand == expected, "\(body)")
                readByHand += 1
            } else {
                #expect(hasFreeText, "a plain body was left to JSONDecoder: \(body)")
            }
        }
        #expect(readByHand > 200)
    }

    @Test("Forms clients may use: whitespace, unknown keys in data and beside events, upper-case ids, fractions, edge dates")
    func forms() throws {
        let id = "5B1C2A4E-9F3D-4C2B-8A1E-0D2C3B4A5F6E"
        let bodies = [
            #"{"events":[{"id":"\#(id)","userId":"u","deviceId":"d","occurredAt":"2026-11-22T10:00:00Z","type":"appStateChanged","data":{"state":"foreground"}}]}"#,
            "{\n  \"events\" : [ {\"id\" : \"\(id.lowercased())\", \"userId\":\"u.1@x\", \"deviceId\":\"d:2-_\",\n\t\"occurredAt\":\"2024-02-29T23:59:59.5Z\", \"type\":\"promptResponded\", \"data\":{\"choice\":\"allowOnce\", \"extra\": [1, -2, 0, true, null, {}]} } ] , \"note\": \"x\"}\r\n",
            #"{"events":[{"id":"\#(id)","userId":"u","deviceId":"d","occurredAt":"1970-01-01T00:00:00.001Z","expectedVersion":0,"type":"settingsChanged","data":{"authorization":"always","precise":null}}]}"#,
            #"{"events":[{"id":"\#(id)","userId":"u","deviceId":"d","occurredAt":"2000-12-31T12:34:56.789Z","expectedVersion":9007199254740991,"type":"statusObserved","data":{"status":"authorizedWhenInUse","accuracy":"reduced"}}]}"#,
            #"{"events":[{"id":"\#(id)","userId":"u","deviceId":"d","occurredAt":"1970-07-20T20:17:40.25Z","expectedVersion":7,"type":"appStateChanged","data":{"state":"background","backgroundIndicator":true}}]}"#,
            #"{"events":[{"id":"\#(id)","userId":"u","deviceId":"d","occurredAt":"9999-12-31T23:59:59.999Z","type":"locationServicesChanged","data":{"enabled":false}}]}"#,
            #"{"events":[{"id":"\#(id)","userId":"u","deviceId":"d","occurredAt":"2026-01-01T00:00:00Z","type":"authorizationRequested","data":{"request":"whenInUse"}}]}"#,
            #"{"events":[]}"#,
        ]
        for body in bodies {
            let expected = try #require(codable(body), "JSONDecoder refused \(body)")
            let byHand = try #require(read(body), "left to JSONDecoder: \(body)")
            #expect(byHand == expected, "\(body)")
        }
    }

    @Test("What only JSONDecoder reads, or refuses: left to it")
    func leftToJSONDecoder() {
        let id = "5b1c2a4e-9f3d-4c2b-8a1e-0d2c3b4a5f6e"
        func body(_ fields: String, type: String = "appStateChanged", data: String = #"{"state":"foreground"}"#) -> String {
            #"{"events":[{"id":"\#(id)","userId":"u","deviceId":"d","occurredAt":"2026-11-22T10:00:00Z",\#(fields)"type":"\#(type)","data":\#(data)}]}"#
        }
        let bodies = [
            body(#""expectedVersion":01,"#), body(#""expectedVersion":1.0,"#), body(#""expectedVersion":1e2,"#),
            body(#""expectedVersion":-1,"#), body(#""expectedVersion":"1","#), body(#""expectedVersion":9007199254740993,"#),
            body(#""userId":"v","#), body("", data: #"{"state":"foreground","state":"background"}"#),
            body(#""note":"caf\u00e9","#), body(#""note":"café","#),
            body("", type: "contextReported", data: #"{"platform":"iOS"}"#),
            body("", type: "authorizationRequested", data: #"{"request":"whenInUse","purposeKey":"Nav"}"#),
            body("", type: "appStateChanged", data: #"{"state":"sideways"}"#),
            body("", type: "appStateChanged", data: #"{"state":"foreground","backgroundIndicator":"yes"}"#),
            body("", type: "settingsChanged", data: "{}"), body("", type: "noSuchType"),
            #"{"events":[{"id":"\#(id)","userId":"u","deviceId":"d","occurredAt":"2026-11-22T10:00:00+00:00","type":"appStateChanged","data":{"state":"foreground"}}]}"#,
            #"{"events":[{"id":"\#(id)","userId":"u","deviceId":"d","occurredAt":"1582-10-15T10:00:00Z","type":"appStateChanged","data":{"state":"foreground"}}]}"#,
            #"{"events":[{"id":"\#(id)","userId":"u","deviceId":"d","occurredAt":"1969-12-31T23:59:59Z","type":"appStateChanged","data":{"state":"foreground"}}]}"#,
            #"{"events":[{"id":"\#(id)","userId":"u","deviceId":"d","occurredAt":"2026-02-30T10:00:00Z","type":"appStateChanged","data":{"state":"foreground"}}]}"#,
            #"{"events":[{"id":"\#(id)","userId":"u","deviceId":"d","occurredAt":"2026-11-22T24:00:00Z","type":"appStateChanged","data":{"state":"foreground"}}]}"#,
            #"{"events":[{"id":"\#(id)","userId":"u","deviceId":"d","occurredAt":"2026-11-22T10:00:00.1234Z","type":"appStateChanged","data":{"state":"foreground"}}]}"#,
            #"{"events":[{"id":"\#(id)","userId":"u","deviceId":"d","occurredAt":"2026-11-22t10:00:00z","type":"appStateChanged","data":{"state":"foreground"}}]}"#,
            #"{"events":[{"id":"{\#(id)}","userId":"u","deviceId":"d","occurredAt":"2026-11-22T10:00:00Z","type":"appStateChanged","data":{"state":"foreground"}}]}"#,
            #"{"events":[{"id":"\#(id)","userId":"u u","deviceId":"d","occurredAt":"2026-11-22T10:00:00Z","type":"appStateChanged","data":{"state":"foreground"}}]}"#,
            #"{"events":{}}"#, #"[]"#, "", #"{"events":[1]}"#, #"{"events":[{}]}"#,
        ]
        for body in bodies {
            #expect(read(body) == nil, "read by hand: \(body)")
        }
    }

    @Test("A body nested deeper than the parser reads is refused (400), not read by JSONDecoder: no stack overflow")
    func deepNesting() throws {
        for depth in [60, 61, 64, 1_000, 300_000] {
            let opening = String(repeating: "[", count: depth), closing = String(repeating: "]", count: depth)
            let body = #"{"events":[{"id":"5b1c2a4e-9f3d-4c2b-8a1e-0d2c3b4a5f6e","userId":"u","deviceId":"d","occurredAt":"2026-11-22T10:00:00Z","type":"appStateChanged","data":{"state":"foreground","extra":"#
                + opening + closing + "}}]}"
            let read = read(body)
            // The envelope and its data are four deep: a field of data fits in 60 more levels.
            #expect((read != nil) == (depth <= 60), "depth \(depth)")
            if depth > 60 {
                #expect(throws: ServiceError(.invalidRequest, "the body nests arrays and objects more than 64 deep")) {
                    try EventBatch.decode(Data(body.utf8), maxEvents: 10)
                }
            }
        }
        #expect(JSONNode.parse(String(repeating: "{\"a\":", count: 100_000) + "1" + String(repeating: "}", count: 100_000)) == nil)
    }

    @Test("Mutated bodies: whenever the hand-written reader answers, JSONDecoder gives the same answer")
    func mutations() throws {
        var generator = SplitMix(seed: 42)
        let seeds = try simulatedBodies(count: 60)
        let alphabet = Array(#"{}[]":,0123456789.-+eEtrufalsnZT\ u"#.utf8) + [0xC3, 0xA9]
        var answered = 0
        for round in 0..<20_000 {
            var bytes = Array(seeds[round % seeds.count].utf8)
            for _ in 0...(generator.next() % 3) {
                let at = Int(generator.next() % UInt64(bytes.count))
                switch generator.next() % 4 {
                case 0: bytes.remove(at: at)
                case 1: bytes[at] = alphabet[Int(generator.next() % UInt64(alphabet.count))]
                case 2: bytes.insert(alphabet[Int(generator.next() % UInt64(alphabet.count))], at: at)
                default:
                    let end = min(bytes.count, at + Int(generator.next() % 24))
                    bytes.insert(contentsOf: bytes[at..<end], at: at)
                }
                if bytes.isEmpty { bytes = [UInt8(ascii: "{")] }
            }
            let body = Data(bytes)
            guard let byHand = EventBatch.read(body) else { continue }
            answered += 1
            let expected = try? EventBatch.decodeWithCodable(body)
            #expect(expected == byHand, "\(String(decoding: bytes, as: UTF8.self))")
        }
        // Most mutations break the body (about 500 of 20,000 are still read by hand); enough
        // must be left to mean something.
        #expect(answered > 250)
    }
}

/// A small seeded generator, so that a failure repeats.
private struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
