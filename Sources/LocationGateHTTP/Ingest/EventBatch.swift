import Foundation
import LocationAuthorization
import LocationGateJSON
import LocationGateService

/// `POST /v1/events` body: `{"events": [...]}`, decoded with each error tied to its event's index.
struct EventBatch: Decodable {
    var events: [IndexedSubmission]

    /// An error inside the batch, with the index of the event it concerns.
    struct IndexedError: Error {
        var index: Int?
        var error: EventValidationError
    }

    struct IndexedSubmission: Decodable {
        var submission: EventSubmission

        init(from decoder: any Decoder) throws {
            let index = decoder.codingPath.last?.intValue
            do {
                submission = try EventSubmission(from: decoder)
            } catch let error as EventValidationError {
                throw IndexedError(index: index, error: error)
            } catch let error as DecodingError {
                var translated = EventValidationError(error)
                // The field path starts with events[i]; the index is reported on its own.
                if let range = translated.field.range(of: "]."), translated.field.hasPrefix("events[") {
                    translated.field = String(translated.field[range.upperBound...])
                }
                throw IndexedError(index: index, error: translated)
            }
        }
    }

    /// Decodes and validates a batch. The body is parsed once (`ClientJSON`: not JSON, or a
    /// name twice in any object, is a 400 naming it and its event's `index`); then its size;
    /// then each event's members (`screen`); then the events are read by hand when the body
    /// is plain (`read`), else with `JSONDecoder`, for shape, vocabulary and bounds; then
    /// duplicate ids.
    static func decode(_ body: Data, maxEvents: Int) throws(ServiceError) -> [EventSubmission] {
        let root = try ClientJSON.parse(body, locate: eventField)
        if let count = root["events"]?.array?.count, count > maxEvents {
            throw ServiceError(.tooLarge, "a batch holds at most \(maxEvents) events, not \(count)")
        }
        try screen(root)
        let submissions: [EventSubmission]
        if let read = read(root, plain: isPlain(body)) {
            submissions = read
        } else {
            submissions = try decodeWithCodable(body)
        }
        guard submissions.count <= maxEvents else {
            throw ServiceError(.tooLarge, "a batch holds at most \(maxEvents) events, not \(submissions.count)")
        }
        // One event (most requests) cannot repeat an id: no set to build.
        guard submissions.count > 1 else { return submissions }
        var seen: Set<UUID> = []
        seen.reserveCapacity(submissions.count)
        for (index, submission) in submissions.enumerated() {
            guard seen.insert(submission.id).inserted else {
                throw ServiceError(.validationFailed, "id \(submission.id.uuidString.lowercased()) appears twice in the batch", index: index)
            }
        }
        return submissions
    }

    /// The members an event may hold at its top level (SPEC §1), as the messages list them.
    static let eventFields = ["data", "deviceId", "expectedVersion", "id", "occurredAt", "type", "userId"]

    /// Whether `name` is one of `eventFields`: by its length first, then one or two
    /// comparisons (every member of every event asks; a set would hash each name).
    static func isEventField(_ name: String) -> Bool {
        switch name.utf8.count {
        case 2: name == "id"
        case 4: name == "type" || name == "data"
        case 6: name == "userId"
        case 8: name == "deviceId"
        case 10: name == "occurredAt"
        case 15: name == "expectedVersion"
        default: false
        }
    }

    /// SPEC §14 on each event's members, which neither reader checks, before either reads: a
    /// member SPEC §1 does not define at the top level (a misspelt `expectedVersion` must not
    /// turn a conditional append into an unconditional one), a `null` member or a `null` for
    /// a field of the type's `data` (no field of an event takes null, and GET never shows one),
    /// and an `expectedVersion` that is a number but not an integer (`1.0` is 1; `1.5`, `1e40`
    /// are not) are 422 `validationFailed` naming the field, with the event's `index`. Fields
    /// the type does not know inside `data` stay ignored (and are never stored), so that newer
    /// clients work with older servers. A value of the wrong JSON type is left to the readers
    /// (400 `invalidRequest`), as is everything else.
    static func screen(_ root: JSONNode) throws(ServiceError) {
        guard let items = root["events"]?.array else { return }
        for (index, item) in items.enumerated() {
            guard let members = item.members else { continue }
            for member in members {
                guard isEventField(member.key) else {
                    throw ServiceError(
                        .validationFailed,
                        "\(member.key.prefix(128)): not a field of an event (its fields: \(eventFields.joined(separator: ", ")))",
                        index: index)
                }
                switch member.value {
                case .null:
                    throw ServiceError(.validationFailed, "\(member.key): must not be null (leave out a field that is optional)", index: index)
                case .number(let number) where member.key == "expectedVersion":
                    guard Int64(exactly: number) != nil else {
                        throw ServiceError(
                            .validationFailed, "expectedVersion: must be an integer (the stream's version before this event)", index: index)
                    }
                case .object(let fields) where member.key == "data":
                    guard fields.contains(where: { $0.value.isNull }),
                          let type = item["type"]?.string.flatMap(EventType.init(rawValue:)) else { continue }
                    for field in fields where field.value.isNull && type.traits.dataFields.contains(field.key) {
                        throw ServiceError(
                            .validationFailed, "data.\(field.key): must not be null (leave out a field that is optional)", index: index)
                    }
                default:
                    continue
                }
            }
        }
    }

    /// A repeated name's field and event, as every error of a batch names them: `data.state`
    /// with the event's `index`, not `events[3].data.state`.
    static func eventField(_ path: JSONNode.Path) -> (field: String, index: Int?) {
        guard path.steps.count > 2, path.steps[0] == .member("events"), case .element(let index) = path.steps[1] else {
            return (path.description, nil)
        }
        return (JSONNode.Path(Array(path.steps.dropFirst(2))).description, index)
    }

    /// Decodes with `JSONDecoder`, translating its errors: every body `read(_:plain:)` leaves.
    static func decodeWithCodable(_ body: Data) throws(ServiceError) -> [EventSubmission] {
        let batch: EventBatch
        do {
            batch = try JSONDecoder().decode(EventBatch.self, from: body)
        } catch let error as IndexedError {
            let code: ServiceError.Code = error.error.isMalformed ? .invalidRequest : .validationFailed
            throw ServiceError(code, error.error.message, index: error.index)
        } catch let error as DecodingError {
            if case .dataCorrupted(let context) = error, context.codingPath.isEmpty {
                throw ServiceError(.malformedJSON, "the body is not valid JSON")
            }
            throw ServiceError(.invalidRequest, "the body must be {\"events\": [...]}: \(EventValidationError(error).message)")
        } catch {
            throw ServiceError(.malformedJSON, "the body is not valid JSON")
        }
        return batch.events.map(\.submission)
    }
}
