import EventLog
import Foundation
import HTTPTypes
import Hummingbird
import LocationAuthorization
import LocationGateService

/// The push streams of SPEC §5: OFREP event streams (`refetchEvaluation` when a context's
/// bulk evaluation changes) and the app's change feed (`/v1/changes`, every committed event
/// in global order, resumable with Last-Event-ID). Both wake on the change hints the cache
/// follower receives (`ChangeHub`) and read the truth from PostgreSQL; while the hints are not
/// followed (the LISTEN connection is down) they poll on the hub's ticks.
struct StreamRoutes {
    let service: GateService
    let streams: StreamRegistry
    let ofrep: OFREPRoutes

    /// How long after a hint the change feed keeps reading on ticks: a commit can stay above
    /// the readable horizon while an older transaction runs.
    static let settleTime: Duration = .seconds(2)
    /// A comment every 5 s on a quiet stream: proxies keep it open, and a client that left is
    /// noticed at the write.
    static let keepAliveInterval: Duration = .seconds(5)
    static let pageSize = 200
    static let lastEventID = HTTPField.Name("Last-Event-ID")

    /// `/v1/changes` on the v1 table, the event streams on the OFREP group.
    func register(v1: RouteTable, ofrep: RouteTable) {
        v1.get("/v1/changes", use: changes)
        ofrep.get("/ofrep/v1/event-streams", use: eventStream)
    }

    // MARK: - /v1/changes

    @Sendable func changes(_ request: Request, context: AppRequestContext) async throws -> Response {
        let identity = try context.require(.read)
        let parameters = request.uri.queryParameters
        let start: LogPosition
        if let text = Self.lastEventID.flatMap({ request.headers[$0] }) ?? parameters.get("after") {
            guard let position = LogPosition(eventID: text) else {
                throw APIError(.invalidRequest, "Last-Event-ID: \(text.prefix(64)) is not an event id of this feed")
            }
            start = position
        } else if parameters.get("from") == "start" {
            start = .start
        } else {
            start = try await self.service.feedHead()
        }
        let slot = try streams.open(identity.appID)
        let service = self.service
        let appID = identity.appID
        return ServerSentEvents.response(registry: streams, slot: slot) { sink in
            await Self.produceChanges(service: service, appID: appID, from: start, to: sink)
        }
    }

    /// Sends every event after `start`, then follows; false when the reader was too slow.
    static func produceChanges(service: GateService, appID: UUID, from start: LogPosition, to sink: ServerSentEvents.Sink) async -> Bool {
        let subscription = service.changes.subscribe(appID: appID)
        defer { subscription.cancel() }
        var position = start
        var lastSent = ContinuousClock.now

        /// Reads and sends until caught up; false when the reader is too slow.
        func catchUp() async -> Bool {
            while !Task.isCancelled {
                guard let page = try? await service.changes(appID: appID, after: position, limit: pageSize) else { return true }
                for message in page {
                    guard sink.send(id: message.position.eventID, data: message.json) else { return false }
                    position = message.position
                    lastSent = .now
                }
                if page.count < pageSize { return true }
            }
            return true
        }

        guard await catchUp() else { return false }
        var settleUntil = ContinuousClock.now + settleTime
        var nextPoll = ContinuousClock.now + .seconds(5)
        var nextOutagePoll = OutagePolling.next(after: .now)
        for await _ in subscription.wakes {
            let hints = subscription.take()
            let now = ContinuousClock.now
            if !hints.subtracting(.tick).isEmpty { settleUntil = now + settleTime }
            let outagePoll = !service.cachesFollowing && now >= nextOutagePoll
            if outagePoll { nextOutagePoll = OutagePolling.next(after: now) }
            if now < settleUntil || now >= nextPoll || outagePoll {
                nextPoll = now + .seconds(5)
                guard await catchUp() else { return false }
            }
            if ContinuousClock.now - lastSent >= keepAliveInterval {
                guard sink.keepAlive() else { return false }
                lastSent = .now
            }
        }
        return true
    }

    // MARK: - OFREP event streams

    @Sendable func eventStream(_ request: Request, context: AppRequestContext) async throws -> Response {
        let identity = try context.require(.read)
        let parameters = request.uri.queryParameters
        guard let user = parameters.get("targetingKey"), EventSubmission.isValidIdentifier(user) else {
            throw OFREPRoutes.ContextFailure(code: "TARGETING_KEY_MISSING", details: "targetingKey (the user id) is required")
        }
        let device = parameters.get("deviceId")
        if let device, !EventSubmission.isValidIdentifier(device) {
            throw OFREPRoutes.ContextFailure(code: "INVALID_CONTEXT", details: "deviceId must be 1 to 128 characters of A-Z a-z 0-9 . _ : @ -")
        }
        let slot = try streams.open(identity.appID)
        let target = OFREPRoutes.Target(userID: user, deviceID: device)
        let ofrep = self.ofrep
        let service = self.service
        let inactivity = streams.inactivity
        let appID = identity.appID
        return ServerSentEvents.response(registry: streams, slot: slot) { sink in
            await Self.produceRefetches(
                service: service, ofrep: ofrep, appID: appID, target: target, inactivity: inactivity, to: sink)
        }
    }

    /// `refetchEvaluation` at once, then whenever the bulk evaluation's ETag changes; ends
    /// after `inactivity` without one. False when the reader was too slow.
    static func produceRefetches(
        service: GateService, ofrep: OFREPRoutes, appID: UUID, target: OFREPRoutes.Target, inactivity: Duration,
        to sink: ServerSentEvents.Sink
    ) async -> Bool {
        let subscription = service.changes.subscribe(appID: appID, userID: target.userID)
        defer { subscription.cancel() }
        func refetch(_ etag: String) -> Bool {
            sink.send(id: nil, data: #"{"etag":"\#(etag.replacingOccurrences(of: "\"", with: "\\\""))","type":"refetchEvaluation"}"#)
        }
        var etag = (try? await ofrep.bulkEvaluation(appID: appID, target: target))?.etag ?? ""
        // A (re)connect is told at once: it may have missed changes.
        guard refetch(etag) else { return false }
        var lastMessage = ContinuousClock.now
        var lastSent = ContinuousClock.now
        var nextOutagePoll = OutagePolling.next(after: .now)
        for await _ in subscription.wakes {
            let hints = subscription.take()
            let now = ContinuousClock.now
            if now - lastMessage >= inactivity { return true }
            // Poll on the stream's own schedule while the hints are not followed.
            let polling = !service.cachesFollowing && now >= nextOutagePoll
            if polling { nextOutagePoll = OutagePolling.next(after: now) }
            if !hints.subtracting(.tick).isEmpty || polling {
                guard let current = try? await ofrep.bulkEvaluation(appID: appID, target: target) else { continue }
                if current.etag != etag {
                    etag = current.etag
                    guard refetch(etag) else { return false }
                    lastMessage = .now
                    lastSent = .now
                }
            }
            if ContinuousClock.now - lastSent >= keepAliveInterval {
                guard sink.keepAlive() else { return false }
                lastSent = .now
            }
        }
        return true
    }
}

