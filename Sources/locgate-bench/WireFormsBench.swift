import ArgumentParser
import Foundation
import LocationAuthorization
import LocationGateJSON
import LocationGateSimulation

/// `locgate-bench wire-forms`: what writing a device state's stored form costs by the
/// hand-written mirror (`DeviceState.write(to:)`, what every append does), against the same
/// state's `Codable` conformance written by a streaming `Encoder` straight into a `JSONWriter`
/// (`StreamingJSONEncoder`, the cheapest way one `Codable` declaration could serve the stored
/// form) and by Foundation's `JSONEncoder`. The states are every state a simulated mixed
/// population (Apple and Android, the location button) passes through, in memory: no
/// database. Prints one JSON object: the mirror's nanoseconds per state, the streaming
/// encoder's as the baseline, their ratio (above 1: the mirror is faster), and Foundation's in
/// the detail.
struct WireFormsBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "wire-forms", abstract: "A device state's stored JSON: the hand-written mirror against one Codable declaration.")

    @Option(help: "Simulated devices whose states are written.")
    var devices = 2_000
    @Option(help: "Times every state is written per timed pass (the best of five passes counts).")
    var rounds = 20

    func run() throws {
        let simulator = PopulationSimulator(platform: .mixed)
        var states: [DeviceState] = []
        for index in 0..<devices {
            var state = DeviceState()
            for submission in simulator.device(index) {
                guard (try? state.apply(submission.event)) != nil else { continue }
                states.append(state)
            }
        }
        guard !states.isEmpty else { throw ValidationError("the simulation made no states") }
        // The two forms are the same JSON but for the state's own installId (the mirror leaves
        // it to its column): checked on every state before anything is timed.
        for state in states {
            var copy = state
            copy.installID = nil
            guard let streamed = JSONNode.parse(String(decoding: try StreamingJSONEncoder.encode(copy), as: UTF8.self)),
                  let mirrored = JSONNode.parse(state.storedJSON), streamed.inKeyOrder == mirrored.inKeyOrder
            else { throw ValidationError("the streaming encoder's form differs from the mirror's: \(state.storedJSON)") }
        }
        let mirror = try Self.nanosecondsPerState(states, rounds: rounds) { state in
            var writer = JSONWriter(capacity: 320)
            state.write(to: &writer)
            return writer.bytes.count
        }
        let streaming = try Self.nanosecondsPerState(states, rounds: rounds) { try StreamingJSONEncoder.encode($0).count }
        let foundation = JSONEncoder()
        let foundationTime = try Self.nanosecondsPerState(states, rounds: rounds) { try foundation.encode($0).count }
        let result = BenchResult(
            name: "stored state JSON (mirror vs one Codable declaration through a streaming encoder)", ours: mirror,
            baseline: streaming, unit: "ns/state", ratio: streaming / mirror,
            detail: "\(states.count) states of \(devices) simulated devices; Foundation's JSONEncoder \(Int(foundationTime)) ns/state")
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        print(String(decoding: try encoder.encode(result), as: UTF8.self))
    }

    /// The best of five passes, each writing every state `rounds` times.
    static func nanosecondsPerState(_ states: [DeviceState], rounds: Int, _ write: (DeviceState) throws -> Int) throws -> Double {
        let clock = ContinuousClock()
        var best = Double.infinity
        var written = 0
        for _ in 0..<5 {
            let start = clock.now
            for _ in 0..<rounds {
                for state in states { written &+= try write(state) }
            }
            let elapsed = clock.now - start
            let nanoseconds = Double(elapsed.components.seconds) * 1e9 + Double(elapsed.components.attoseconds) / 1e9
            best = min(best, nanoseconds / Double(rounds * states.count))
        }
        // Kept alive, so that no pass is optimized away.
        if written == 0 { throw ValidationError("nothing was written") }
        return best
    }
}

/// Writes a value's `Codable` form straight into a `JSONWriter`, keys in the order the
/// conformance encodes them: no tree, unlike Foundation's encoder. Each value's object or
/// array is closed when its `encode(to:)` returns. A nested container (`nestedContainer`,
/// `superEncoder`) has no such end, so it is refused: the encoding throws.
final class StreamingJSONEncoder: Encoder {
    var writer = JSONWriter(capacity: 384)
    var codingPath: [any CodingKey] = []
    var userInfo: [CodingUserInfoKey: Any] = [:]
    /// What each value being encoded opened: 0 nothing, 1 an object, 2 an array.
    private var opened: [UInt8] = []
    /// A nested container was asked for: what it wrote is not JSON.
    fileprivate var unsupported = false

    static func encode<T: Encodable>(_ value: T) throws -> [UInt8] {
        let encoder = StreamingJSONEncoder()
        try encoder.encodeValue(value)
        guard !encoder.unsupported else {
            throw EncodingError.invalidValue(value, .init(codingPath: [], debugDescription: "nested containers are not supported"))
        }
        return encoder.writer.bytes
    }

    fileprivate func encodeValue<T: Encodable>(_ value: T) throws {
        opened.append(0)
        try value.encode(to: self)
        switch opened.removeLast() {
        case 1: writer.objectEnd()
        case 2: writer.arrayEnd()
        default: break
        }
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        if opened.last == 0 {
            writer.objectStart()
            opened[opened.count - 1] = 1
        }
        return KeyedEncodingContainer(Keyed<Key>(encoder: self))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        if opened.last == 0 {
            writer.arrayStart()
            opened[opened.count - 1] = 2
        }
        return Unkeyed(encoder: self)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer { Single(encoder: self) }

    private struct Keyed<Key: CodingKey>: KeyedEncodingContainerProtocol {
        let encoder: StreamingJSONEncoder
        var codingPath: [any CodingKey] { [] }

        mutating func encodeNil(forKey key: Key) throws { encoder.writer.key(key.stringValue); encoder.writer.null() }
        mutating func encode(_ value: Bool, forKey key: Key) throws { encoder.writer.key(key.stringValue); encoder.writer.bool(value) }
        mutating func encode(_ value: String, forKey key: Key) throws { encoder.writer.key(key.stringValue); encoder.writer.string(value) }
        mutating func encode(_ value: Int, forKey key: Key) throws { encoder.writer.key(key.stringValue); encoder.writer.int(value) }
        mutating func encode(_ value: Double, forKey key: Key) throws { encoder.writer.key(key.stringValue); encoder.writer.number(value) }
        mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
            encoder.writer.key(key.stringValue)
            try encoder.encodeValue(value)
        }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
            encoder.unsupported = true
            return KeyedEncodingContainer(Keyed<NestedKey>(encoder: StreamingJSONEncoder()))
        }

        mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
            encoder.unsupported = true
            return Unkeyed(encoder: StreamingJSONEncoder())
        }

        mutating func superEncoder() -> any Encoder {
            encoder.unsupported = true
            return StreamingJSONEncoder()
        }

        mutating func superEncoder(forKey key: Key) -> any Encoder { superEncoder() }
    }

    private struct Unkeyed: UnkeyedEncodingContainer {
        let encoder: StreamingJSONEncoder
        var codingPath: [any CodingKey] { [] }
        var count = 0

        mutating func encodeNil() throws { encoder.writer.null(); count += 1 }
        mutating func encode(_ value: String) throws { encoder.writer.string(value); count += 1 }
        mutating func encode(_ value: Bool) throws { encoder.writer.bool(value); count += 1 }
        mutating func encode(_ value: Int) throws { encoder.writer.int(value); count += 1 }
        mutating func encode<T: Encodable>(_ value: T) throws { try encoder.encodeValue(value); count += 1 }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
            encoder.unsupported = true
            return KeyedEncodingContainer(Keyed<NestedKey>(encoder: StreamingJSONEncoder()))
        }

        mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
            encoder.unsupported = true
            return Unkeyed(encoder: StreamingJSONEncoder())
        }

        mutating func superEncoder() -> any Encoder {
            encoder.unsupported = true
            return StreamingJSONEncoder()
        }
    }

    private struct Single: SingleValueEncodingContainer {
        let encoder: StreamingJSONEncoder
        var codingPath: [any CodingKey] { [] }

        mutating func encodeNil() throws { encoder.writer.null() }
        mutating func encode(_ value: Bool) throws { encoder.writer.bool(value) }
        mutating func encode(_ value: String) throws { encoder.writer.string(value) }
        mutating func encode(_ value: Int) throws { encoder.writer.int(value) }
        mutating func encode(_ value: Double) throws { encoder.writer.number(value) }
        mutating func encode<T: Encodable>(_ value: T) throws { try encoder.encodeValue(value) }
    }
}
