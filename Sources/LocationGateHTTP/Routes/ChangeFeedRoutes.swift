import EventLog
import Foundation
import HTTPTypes
import Hummingbird
import LocationGateService

/// The change feed of SPEC §5 (`GET /v1/changes`), for read and admin keys: every committed
/// event of the app in the log's global order, as server-sent events, resumable with
/// Last-Event-ID; from the service's change feed face (`ChangeFeedReading`). A stream wakes on
/// the change hints the cache follower receives and reads the truth from PostgreSQL; while the
/// hints are not followed (the LISTEN connection is down) it polls on the hub's ticks. Every
/// read it makes goes through the registry's `StreamReads`, a bounded share of the database
/// connections taken in turn by app, so streams opening, catching up and closing never take
/// the connections other requests need (SPEC §5 "Resources"). Mounted under `/v1`.
struct ChangeFeedRoutes {
    let feed: any ChangeFeedReading
    let streams: StreamRegistry

    /// How long after a hint the change feed keeps reading on ticks: a commit can stay above
    /// the readable horizon while an older transaction runs.
    static let settleTime: Duration = .seconds(2)
    static let pageSize = 200
    static let lastEventID = HTTPField.Name("Last-Event-ID")

    var collection: RouteCollection<AppRequestContext> {
        let routes = RouteCollection(context: AppRequestContext.self)
        routes.scoped(.read).get("/changes", use: changes)
        return routes
    }

    @Sendable func changes(_ request: Request, context: AppRequestContext, caller: APIIdentity) async throws -> Response {
        let parameters = try QueryParameters(of: request)
        let start: LogPosition
        if let text = Self.lastEventID.flatMap({ request.headers[$0] }) ?? parameters.get("after") {
            guard let position = LogPosition(eventID: text) else {
                throw APIError(.invalidRequest, "Last-Event-ID: \(text.prefix(64)) is not an event id of this feed")
            }
            start = position
        } else if parameters.get("from") == "start" {
            start = .start
        } else {
            let feed = self.feed
            start = try await streams.reads.run(appID: caller.appID) { try await feed.feedHead() }
        }
        let slot = try streams.open(caller.appID, for: request)
        let feed = self.feed
        let reads = streams.reads
        let appID = caller.appID
        return ServerSentEvents.response(registry: streams, slot: slot) { sink in
            await Self.produceChanges(feed: feed, reads: reads, appID: appID, from: start, to: sink)
        }
    }

    /// Sends every event after `start`, then follows; false when the reader was too slow. Each
    /// page is read within `reads`, the streams' share of the database.
    static func produceChanges(
        feed: any ChangeFeedReading, reads: StreamReads, appID: UUID, from start: LogPosition, to sink: ServerSentEvents.Sink
    ) async -> Bool {
        let subscription = feed.subscribe(appID: appID, userID: nil)
        defer { subscription.cancel() }
        var position = start
        var lastSent = ContinuousClock.now

        /// Reads and sends until caught up; false when the reader is too slow.
        func catchUp() async -> Bool {
            while !Task.isCancelled {
                let after = position
                guard let page = try? await reads.run(appID: appID, { try await feed.changes(appID: appID, after: after, limit: pageSize) })
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
            let outagePoll = !feed.cachesFollowing && now >= nextOutagePoll
            if outagePoll { nextOutagePoll = OutagePolling.next(after: now) }
            if now < settleUntil || now >= nextPoll || outagePoll {
                nextPoll = now + .seconds(5)
                guard await catchUp() else { return false }
            }
            if ContinuousClock.now - lastSent >= ServerSentEvents.keepAliveInterval {
                guard sink.keepAlive() else { return false }
                lastSent = .now
            }
        }
        return true
    }
}
