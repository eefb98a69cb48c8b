import EventLog
import Foundation
import LocationAuthorization
import Logging
import Metrics
import PostgresClient

/// Ingest (SPEC §5 `POST /v1/events`): a batch of events appended atomically through the
/// projection, small batches sharing transactions (group commit), the cache and the push
/// streams told of the committed states at once. The HTTP layer sees it as `EventIngest`.
public final class IngestCapability: Sendable {
    let log: EventLog
    let cache: DeviceStateCache
    let hub: ChangeHub
    /// Small appends share transactions (group commit); large batches go alone.
    let committer: GroupCommitter
    /// Marks the NOTIFYs of these appends (`StreamChange.originLine`), so that this service's
    /// own follower skips them: `ingest` has stored the new states in the cache and woken the
    /// push streams itself.
    let appendOrigin: String
    /// How far ahead of this server's clock an event's `occurredAt` may be (SPEC §14): later is
    /// a 422 naming `occurredAt`. Nil accepts any time in SPEC §1's range.
    let maxClockSkew: Duration?
    let eventsAppended = Counter(label: "locgate_events_appended_total")
    let rejections = Counter(label: "locgate_event_batches_rejected_total")

    /// SPEC §5: at most 1,000 events in a batch.
    public static let maxBatchEvents = 1000
    /// Batches of at most this many events go through group commit.
    static let groupCommitLimit = 100

    init(
        log: EventLog, cache: DeviceStateCache, hub: ChangeHub, committer: GroupCommitter, appendOrigin: String,
        maxClockSkew: Duration?
    ) {
        self.log = log
        self.cache = cache
        self.hub = hub
        self.committer = committer
        self.appendOrigin = appendOrigin
        self.maxClockSkew = maxClockSkew
    }

    /// Appends a batch of decoded submissions atomically through the projection (the HTTP
    /// layer decodes `POST /v1/events`; `locgate simulate` builds them).
    public func ingest(appID: UUID, submissions: [EventSubmission]) async throws(ServiceError) -> [EventResult] {
        guard !submissions.isEmpty else { return [] }
        if let maxClockSkew {
            let latest = Date().addingTimeInterval(Double(maxClockSkew.components.seconds))
            try Self.checkClockSkew(submissions, latest: latest, skew: maxClockSkew)
        }
        var decoded: [LocationEvent] = []
        decoded.reserveCapacity(submissions.count)
        var newEvents: [NewEvent] = []
        newEvents.reserveCapacity(submissions.count)
        for submission in submissions {
            decoded.append(submission.event)
            newEvents.append(NewEvent(
                id: submission.id, userID: submission.userId, deviceID: submission.deviceId,
                type: submission.event.type.rawValue, data: submission.event.dataJSON, occurredAt: submission.occurredAt,
                expectedVersion: submission.expectedVersion))
        }
        let committed: CommittedAppend
        let resyncs = cache.resyncCount
        do {
            if newEvents.count <= Self.groupCommitLimit {
                committed = try await committer.append(appID: appID, events: newEvents, decoded: decoded)
            } else {
                let projector = DeviceProjector(events: decoded)
                let results = try await log.append(appID: appID, events: newEvents, projector: projector, origin: appendOrigin)
                committed = CommittedAppend(results: results, outcomes: projector.outcomes, states: projector.states)
            }
        } catch {
            if Self.mayHaveCommitted(error) { forgetDevices(of: submissions, appID: appID) }
            rejections.increment()
            if let error = error as? EventLogError { throw ServiceError.appending(error) }
            throw ServiceError.from(error)
        }
        // What this service's follower would have done on the append's NOTIFY, which it skips
        // (`DeviceCacheInvalidation`): the cache holds the committed states, the push streams wake.
        var moved: [StreamChange] = []
        moved.reserveCapacity(committed.states.count)
        for (key, version, state) in committed.states {
            cache.store(key, version: version, state: state, resyncs: resyncs)
            moved.append(StreamChange(stream: key, version: version))
        }
        hub.publish(moved)
        eventsAppended.increment(by: committed.results.reduce(0) { $0 + ($1.duplicate ? 0 : 1) })
        do {
            return try committed.results.enumerated().map { index, result in
                // A new event's outcome is the one just computed; a duplicate's is read back.
                let outcome = try committed.outcomes[index] ?? JSONText.outcome(result.outcome ?? "{}")
                return EventResult(
                    id: result.id.lowercasedText, userId: result.userID, deviceId: result.deviceID,
                    version: result.version, effects: outcome.effects, status: outcome.after.status,
                    duplicate: result.duplicate)
            }
        } catch {
            throw ServiceError(.internalError, "a stored outcome could not be read")
        }
    }

    /// Whether a failed append may still have committed: a refusal (a rule, a version or id
    /// conflict, a full queue) rolled back or never began; a database failure may have broken
    /// off at COMMIT, after the commit.
    static func mayHaveCommitted(_ error: any Error) -> Bool {
        switch error {
        case let error as EventLogError:
            if case .database = error { return true }
            return false
        case is ServiceError: return false
        default: return true
        }
    }

    /// After an append that may have committed although it failed: its devices leave the cache
    /// and their push streams wake, since this service skips its own NOTIFYs and cannot learn of
    /// the commit from its follower.
    private func forgetDevices(of submissions: [EventSubmission], appID: UUID) {
        let keys = Set(submissions.map { StreamKey(appID: appID, userID: $0.userId, deviceID: $0.deviceId) })
        for key in keys { cache.remove(key) }
        hub.publish(keys.map { StreamChange(stream: $0, version: .max) })
    }

    /// SPEC §14: an `occurredAt` more than `skew` ahead of the server's clock (`latest` is now
    /// plus `skew`) is a 422 naming `occurredAt` and the first such event; nothing of the
    /// batch is stored.
    static func checkClockSkew(_ submissions: [EventSubmission], latest: Date, skew: Duration) throws(ServiceError) {
        guard let index = submissions.firstIndex(where: { $0.occurredAt > latest }) else { return }
        throw ServiceError(
            .validationFailed,
            "occurredAt: more than \(skew.components.seconds) seconds ahead of the server's clock (\(RFC3339.string(from: latest)) at the latest)",
            index: index)
    }
}
