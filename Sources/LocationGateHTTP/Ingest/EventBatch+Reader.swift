import Foundation
import LocationAuthorization
import LocationGateJSON

extension EventBatch {
    /// Reads the common body by hand: `JSONDecoder` was a twelfth of the server's time per
    /// one-event append. Returns the submissions only when the body is one this reader is sure
    /// `JSONDecoder` reads the same way and accepts; nil for anything else (bad input included),
    /// and `decode` then reads it with `JSONDecoder`, whose errors name the field at fault. So
    /// an answer never depends on which reader read the body (`EventBatchReaderTests` checks
    /// both readers against each other on valid, odd and mutated bodies).
    ///
    /// What sends a body to `JSONDecoder`: a byte outside ASCII or a backslash anywhere; a number
    /// that is not a plain integer; a key twice in one object; an event whose type's traits say
    /// its `data` is not for this reader (`EventTraits.reading`: free text has bounds to check,
    /// flags and permission sets rules of their own); a time other than
    /// `YYYY-MM-DDTHH:MM:SS[.f{1,3}]Z`; and every kind of invalid input.
    static func read(_ body: Data) -> [EventSubmission]? {
        body.withUnsafeBytes { raw -> [EventSubmission]? in
            let bytes = raw.bindMemory(to: UInt8.self)
            guard isPlain(bytes), let root = JSONNode.parse(utf8: bytes), root.hasUniqueKeys,
                  let items = root["events"]?.array else { return nil }
            var submissions: [EventSubmission] = []
            submissions.reserveCapacity(items.count)
            for item in items {
                guard let submission = submission(item) else { return nil }
                submissions.append(submission)
            }
            return submissions
        }
    }

    private static func submission(_ item: JSONNode) -> EventSubmission? {
        guard item.hasUniqueKeys,
              let id = item["id"]?.string.flatMap(UUID.init(canonicalText:)),
              let userId = item["userId"]?.string, EventSubmission.isValidIdentifier(userId),
              let deviceId = item["deviceId"]?.string, EventSubmission.isValidIdentifier(deviceId),
              let occurredAt = item["occurredAt"]?.string.flatMap(RFC3339.utcDate(from:)),
              let type = item["type"]?.string.flatMap(EventType.init(rawValue:)),
              let data = item["data"], data.hasUniqueKeys,
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
