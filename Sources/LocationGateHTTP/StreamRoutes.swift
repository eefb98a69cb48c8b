import EventLog
import Foundation
import HTTPTypes
import Hummingbird
import LocationAuthorization
import LocationGateJSON
import LocationGateService

/// The push streams of SPEC §5: OFREP event streams (`refetchEvaluation` when a context's
/// bulk evaluation changes) and the app's change feed (`/v1/changes`, every committed event
/// in global order, resumable with Last-Event-ID). Both wake on the change hints the cache
/// follower receives (`ChangeHub`) and read the truth from PostgreSQL; while the hints are not
/// followed (the LISTEN connection is down) they poll on the hub's ticks. Every read a stream
/// makes goes through the registry's `StreamReads`, a bounded share of the database
/// connections taken in turn by app, so streams opening, catching up and closing never take
/// the connections other requests need (SPEC §5 "Resources").
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
            let service = self.service
            start = try await streams.reads.run(appID: identity.appID) { try await service.feedHead() }
        }
        let slot = try streams.open(identity.appID)
        let service = self.service
        let reads = streams.reads
        let appID = identity.appID
        return ServerSentEvents.response(registry: streams, slot: slot) { sink in
            await Self.produceChanges(service: service, reads: reads, appID: appID, from: start, to: sink)
        }
    }

    /// Sends every event after `start`, then follows; false when the reader was too slow. Each
    /// page is read within `reads`, the streams' share of the database.
    static func produceChanges(
        service: GateService, reads: StreamReads, appID: UUID, from start: LogPosition, to sink: ServerSentEvents.Sink
    ) async -> Bool {
        let subscription = service.changes.subscribe(appID: appID)
        defer { subscription.cancel() }
        var position = start
        var lastSent = ContinuousClock.now

        /// Reads and sends until caught up; false when the reader is too slow.
        func catchUp() async -> Bool {
            while !Task.isCancelled {
                let after = position
                guard let page = try? await reads.run(appID: appID, { try await service.changes(appID: appID, after: after, limit: pageSize) })
                else { return true }
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
            throw OFREPRoutes.ContextFailure(code: "INVALID_CONTEXT", details: "deviceId must be \(EventSubmission.identifierRule)")
        }
        let slot = try streams.open(identity.appID)
        let target = OFREPRoutes.Target(userID: user, deviceID: device)
        let ofrep = self.ofrep
        let service = self.service
        let reads = streams.reads
        let inactivity = streams.inactivity
        let appID = identity.appID
        return ServerSentEvents.response(registry: streams, slot: slot) { sink in
            await Self.produceRefetches(
                service: service, ofrep: ofrep, reads: reads, appID: appID, target: target, inactivity: inactivity, to: sink)
        }
    }

    /// `refetchEvaluation` at once, then whenever the bulk evaluation's ETag changes; ends
    /// after `inactivity` without one. False when the reader was too slow. Each evaluation is
    /// read within `reads`, the streams' share of the database.
    static func produceRefetches(
        service: GateService, ofrep: OFREPRoutes, reads: StreamReads, appID: UUID, target: OFREPRoutes.Target,
        inactivity: Duration, to sink: ServerSentEvents.Sink
    ) async -> Bool {
        let subscription = service.changes.subscribe(appID: appID, userID: target.userID)
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
            try? await reads.run(appID: appID) { try await ofrep.bulkEvaluation(appID: appID, target: target).etag }
        }
        var etag = await evaluate() ?? ""
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
                guard let current = await evaluate() else { continue }
                if current != etag {
                    etag = current
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

