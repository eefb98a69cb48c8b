import Foundation
import HTTPTypes
import Hummingbird
import LocationAuthorization
import LocationGateService

/// `POST /v1/events` (SPEC §5), for ingest and admin keys: the batch is read and checked at the
/// edge (`EventBatch`), a device-bound key's device token is checked, and the batch is appended
/// through the service's ingest face (`EventIngest`). Every refusal, the scope's included, is
/// counted in `locgate_rejections_total{code}` (`EventRejections`). Mounted under `/v1`.
struct EventRoutes {
    let ingest: any EventIngest
    var rejections = EventRejections()

    var collection: RouteCollection<AppRequestContext> {
        let routes = RouteCollection(context: AppRequestContext.self)
        // Counted outside the scope check: a key without the ingest scope is a refusal too.
        let group = routes.group().add(middleware: RejectionCounting(rejections: rejections)).scoped(.ingest)
        group.post("/events", use: append)
        return routes
    }

    /// The hot path: the results' JSON as `JSONWriter` wrote it once (`EventResults.json`).
    @Sendable func append(_ request: Request, context: AppRequestContext, caller: APIIdentity) async throws -> PreparedBody {
        var request = request
        let body = try await request.bodyData(limit: 1 << 20)
        let submissions = try EventBatch.decode(body, maxEvents: IngestCapability.maxBatchEvents)
        if let secret = caller.tokenSecret {
            try Self.requireDeviceToken(request, secret: secret, covering: submissions)
        }
        let results = try await ingest.ingest(appID: caller.appID, submissions: submissions)
        // An ingest key is in every copy of the app: its answer says what was stored, not
        // the device's state (which a read key asks for).
        return PreparedBody(json: EventResults(results: results, withState: caller.scope != .ingest).json)
    }

    static let deviceTokenHeader = HTTPField.Name("X-Device-Token")

    /// A device-bound key's batch needs a valid device token (401 otherwise) that covers
    /// every event's user and device (403 naming the first that it does not). Checked before
    /// anything is stored.
    static func requireDeviceToken(_ request: Request, secret: String, covering submissions: [EventSubmission]) throws {
        guard let text = deviceTokenHeader.flatMap({ request.headers[$0] }) else {
            throw APIError(.unauthorized, "this ingest key is bound to devices: send X-Device-Token, a token from the app's backend")
        }
        let token: DeviceToken
        do throws(DeviceToken.Refusal) {
            token = try DeviceToken.verify(text, secret: secret)
        } catch {
            throw APIError(.unauthorized, error.description)
        }
        if let index = submissions.firstIndex(where: { !token.covers(userID: $0.userId, deviceID: $0.deviceId) }) {
            throw APIError(
                ServiceError(.forbidden, "events[\(index)]: the device token covers user \(token.userID)\(token.deviceID.map { " on device \($0)" } ?? "") only", index: index))
        }
    }

    /// Counts every refusal of the routes inside it, under the code of its answer.
    private struct RejectionCounting: RouterMiddleware {
        typealias Context = AppRequestContext
        let rejections: EventRejections

        func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
            do {
                return try await next(request, context)
            } catch {
                rejections.count(error)
                throw error
            }
        }
    }
}
