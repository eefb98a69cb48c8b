import Foundation
import LocationAuthorization
import LocationGateJSON
import LocationGateService

/// The answer to `POST /v1/events`, by hand for the same reason: one small append per request
/// is the other hot path. `EventResultsJSONTests` checks it against the Codable form.
struct EventResults: Encodable {
    var results: [EventResult]
    /// `effects` and `status` too (read and admin keys); an ingest key's answer has only what
    /// identifies the stored event.
    var withState = true

    enum CodingKeys: String, CodingKey { case results }

    var json: [UInt8] {
        var writer = JSONWriter(capacity: 160 * results.count + 16)
        writer.objectStart()
        writer.key("results")
        writer.arrayStart()
        for result in results {
            writer.objectStart()
            writer.field("deviceId", result.deviceId)
            writer.field("duplicate", result.duplicate)
            if withState {
                writer.key("effects")
                writer.arrayStart()
                for effect in result.effects { effect.write(to: &writer) }
                writer.arrayEnd()
            }
            writer.field("id", result.id)
            if withState { writer.field("status", result.status) }
            writer.field("userId", result.userId)
            writer.field("version", Int(result.version))
            writer.objectEnd()
        }
        writer.arrayEnd()
        writer.objectEnd()
        return writer.bytes
    }
}
