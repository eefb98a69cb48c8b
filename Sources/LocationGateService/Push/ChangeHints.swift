import Foundation

/// What a push stream waits on: the change hints of an app (or one user of it) and whether
/// they are followed now. A hint only wakes a stream, which then reads the truth again; while
/// hints are not followed (`cachesFollowing` false) a stream polls.
public protocol ChangeHints: Sendable {
    /// Hints for one app, or one user of it, until the subscription is cancelled.
    func subscribe(appID: UUID, userID: String?) -> ChangeHub.Subscription
    /// Whether the change notifications are followed now (see `CacheCoherence`).
    var cachesFollowing: Bool { get }
}

extension PushCapability: ChangeHints {
    public func subscribe(appID: UUID, userID: String?) -> ChangeHub.Subscription {
        hub.subscribe(appID: appID, userID: userID)
    }
}
