import EventLog
import Foundation
import Hummingbird
import LocationAuthorization
import LocationGateService

/// The user and device ids of a route's path (`/v1/users/{u}/devices/{d}/...`).
enum PathParameters {
    /// A user or device id of the path, percent-decoded, within SPEC §1's id rules (else 422
    /// naming `field`).
    static func identifier(_ context: AppRequestContext, _ name: String, field: String) throws -> String {
        // Percent-decoding only when there is something to decode: Foundation's decoder was
        // 5% of a cached gate.
        let raw = context.parameters.get(name) ?? ""
        let value = raw.utf8.contains(UInt8(ascii: "%")) ? raw.removingPercentEncoding ?? "" : raw
        guard EventSubmission.isValidIdentifier(value) else {
            throw APIError(.validationFailed, "\(field): must be \(EventSubmission.identifierRule)")
        }
        return value
    }

    /// The stream of the path's user and device, in the caller's app.
    static func streamKey(_ identity: APIIdentity, _ context: AppRequestContext) throws -> StreamKey {
        StreamKey(appID: identity.appID, userID: try identifier(context, "user", field: "userId"),
                  deviceID: try identifier(context, "device", field: "deviceId"))
    }
}
