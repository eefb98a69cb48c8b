import Foundation
import LocationAuthorization
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

    /// Decodes and validates a batch: shape, vocabulary, size and duplicate ids.
    static func decode(_ body: Data, maxEvents: Int) throws(ServiceError) -> [EventSubmission] {
        let submissions: [EventSubmission]
        if let read = read(body) {
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

    /// Decodes with `JSONDecoder`, translating its errors: every body `read(_:)` leaves.
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
