import Foundation
import LocationAuthorization
import LocationGateJSON
import PostgresClient

extension EventBatch {
    /// Reads the common body by hand: `JSONDecoder` was a twelfth of the server's time per
    /// one-event append. `root` is the body `decode` parsed (strictly: no name twice in any
    /// object) and screened (`screen`: no unknown event member, no null). Returns the
    /// submissions only when the body is one this reader is sure `JSONDecoder` reads the same
    /// way and accepts; nil for anything else (bad input included), and `decode` then reads it
    /// with `JSONDecoder`, whose errors name the field at fault. So an answer never depends on
    /// which reader read the body (`EventBatchReaderTests` checks both readers against each
    /// other on valid, odd and mutated bodies).
    ///
    /// What sends a body to `JSONDecoder`: a byte outside ASCII or a backslash anywhere, or a
    /// number that is not a plain integer (`plain` false: `isPlain`); an event whose type's
    /// traits say its `data` is not for this reader (`EventTraits.reading`: free text has
    /// bounds to check, flags and permission sets rules of their own); a time other than
    /// `YYYY-MM-DDTHH:MM:SS[.f{1,3}]Z`; and every kind of invalid input.
    static func read(_ root: JSONNode, plain: Bool) -> [EventSubmission]? {
        guard plain, let items = root["events"]?.array else { return nil }
        var submissions: [EventSubmission] = []
        submissions.reserveCapacity(items.count)
        for item in items {
            guard let submission = submission(item) else { return nil }
            submissions.append(submission)
        }
        return submissions
    }

    /// What `decode` reads of `body` by hand: nil where it refuses the body or leaves it to
    /// `JSONDecoder` (for tests, which hold the two readers to the same answers).
    static func read(_ body: Data) -> [EventSubmission]? {
        guard let root = try? ClientJSON.parse(body), (try? screen(root)) != nil else { return nil }
        return read(root, plain: isPlain(body))
    }

    private static func submission(_ item: JSONNode) -> EventSubmission? {
        guard let id = item["id"]?.string.flatMap(UUID.init(postgresUUIDText:)),
              let userId = item["userId"]?.string, EventSubmission.isValidIdentifier(userId),
              let deviceId = item["deviceId"]?.string, EventSubmission.isValidIdentifier(deviceId),
              let occurredAt = item["occurredAt"]?.string.flatMap(RFC3339.utcDate(from:)),
              let type = item["type"]?.string.flatMap(EventType.init(rawValue:)),
              let data = item["data"],
              type.traits.readsByHand(has: { data[$0] != nil })
        else { return nil }
        guard let event = LocationEvent(type: type, data: data) else { return nil }
        var expectedVersion: Int64?
        if let node = item["expectedVersion"], !node.isNull {
            // Integers only (`isPlain`), and within a Double's exact range.
            guard case .number(let value) = node, value >= 0, value < 9_007_199_254_740_992,
                  let exact = Int64(exactly: value) else { return nil }
            expectedVersion = exact
        }
        return EventSubmission(
            id: id, userId: userId, deviceId: deviceId, occurredAt: occurredAt, event: event,
            expectedVersion: expectedVersion)
    }

    /// `isPlain` over a body's bytes.
    static func isPlain(_ body: Data) -> Bool {
        body.withUnsafeBytes { (raw: UnsafeRawBufferPointer) -> Bool in isPlain(raw.bindMemory(to: UInt8.self)) }
    }

    /// ASCII without backslashes, and outside strings nothing a plain integer or a literal does
    /// not need (no `.`, `+`, or exponent).
    private static func isPlain(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var inString = false
        var previous: UInt8 = 0
        for byte in bytes {
            if byte >= 0x80 || byte == UInt8(ascii: "\\") { return false }
            if byte == UInt8(ascii: "\"") {
                inString.toggle()
            } else if !inString {
                switch byte {
                case UInt8(ascii: "."), UInt8(ascii: "+"): return false
                case UInt8(ascii: "e"), UInt8(ascii: "E"):
                    if previous >= UInt8(ascii: "0") && previous <= UInt8(ascii: "9") { return false }
                default: break
                }
            }
            previous = byte
        }
        return true
    }
}
