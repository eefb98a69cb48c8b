import Foundation
import HTTPTypes
import Hummingbird
import LocationAuthorization
import LocationGateJSON
import LocationGateService

/// OFREP event streams (ADR-0008, SPEC §5: `GET /ofrep/v1/event-streams`), for read and admin
/// keys: `refetchEvaluation` at once and whenever the context's bulk evaluation changes (its
/// ETag, from `OFREPFlags`: the features and the experiments), on the change hints of the user
/// (`ChangeHints`); while the hints are not followed it polls on a schedule of its own
/// (`OutagePolling`). Every evaluation goes through the registry's `StreamReads`, as the
/// change feed's reads do.
struct OFREPStreamRoutes {
    let flags: OFREPFlags
    let hints: any ChangeHints
    let streams: StreamRegistry

    /// Mounted under the `/ofrep/v1` area, whose `OFREPErrorMiddleware` gives every error
    /// OFREP's body.
    var collection: RouteCollection<AppRequestContext> {
        let routes = RouteCollection(context: AppRequestContext.self)
        routes.scoped(.read).get("/event-streams", use: eventStream)
        return routes
    }

    @Sendable func eventStream(_ request: Request, context: AppRequestContext, caller: APIIdentity) async throws -> Response {
        let parameters: QueryParameters
        do {
            parameters = try QueryParameters(of: request)
        } catch {
            throw OFREPError.Failure(code: "INVALID_CONTEXT", details: error.message)
        }
        guard let user = parameters.get("targetingKey"), EventSubmission.isValidIdentifier(user) else {
            throw OFREPError.Failure(code: "TARGETING_KEY_MISSING", details: "targetingKey (the user id) is required")
        }
        let device = parameters.get("deviceId")
        if let device, !EventSubmission.isValidIdentifier(device) {
            throw OFREPError.Failure(code: "INVALID_CONTEXT", details: "deviceId must be \(EventSubmission.identifierRule)")
        }
        let slot = try streams.open(caller.appID, for: request)
        let target = OFREPTarget(userID: user, deviceID: device)
        let flags = self.flags
        let hints = self.hints
        let reads = streams.reads
        let inactivity = streams.inactivity
        let appID = caller.appID
        return ServerSentEvents.response(registry: streams, slot: slot) { sink in
            await Self.produceRefetches(
                flags: flags, hints: hints, reads: reads, appID: appID, target: target, inactivity: inactivity, to: sink)
        }
    }

    /// `refetchEvaluation` at once, then whenever the bulk evaluation's ETag changes; ends
    /// after `inactivity` without one. False when the reader was too slow. Each evaluation is
    /// read within `reads`, the streams' share of the database.
    static func produceRefetches(
        flags: OFREPFlags, hints: any ChangeHints, reads: StreamReads, appID: UUID, target: OFREPTarget,
        inactivity: Duration, to sink: ServerSentEvents.Sink
    ) async -> Bool {
        let subscription = hints.subscribe(appID: appID, userID: target.userID)
        defer { subscription.cancel() }
        func refetch(_ etag: String) -> Bool {
            var message = JSONWriter(capacity: 64)
            message.objectStart()
            message.field("etag", etag)
            message.field("type", "refetchEvaluation")
            message.objectEnd()
            return sink.send(id: nil, data: message.text)
        }
        func evaluate() async -> String? {
            try? await reads.run(appID: appID) { try await flags.evaluateFlags(appID: appID, target: target).etag }
        }
        var etag = await evaluate() ?? ""
        // A (re)connect is told at once: it may have missed changes.
        guard refetch(etag) else { return false }
        var lastMessage = ContinuousClock.now
        var lastSent = ContinuousClock.now
        var nextOutagePoll = OutagePolling.next(after: .now)
        for await _ in subscription.wakes {
            let changes = subscription.take()
            let now = ContinuousClock.now
            if now - lastMessage >= inactivity { return true }
            // Poll on the stream's own schedule while the hints are not followed.
            let polling = !hints.cachesFollowing && now >= nextOutagePoll
            if polling { nextOutagePoll = OutagePolling.next(after: now) }
            if !changes.subtracting(.tick).isEmpty || polling {
                guard let current = await evaluate() else { continue }
                if current != etag {
                    etag = current
                    guard refetch(etag) else { return false }
                    lastMessage = .now
                    lastSent = .now
                }
            }
            if ContinuousClock.now - lastSent >= ServerSentEvents.keepAliveInterval {
                guard sink.keepAlive() else { return false }
                lastSent = .now
            }
        }
        return true
    }
}
