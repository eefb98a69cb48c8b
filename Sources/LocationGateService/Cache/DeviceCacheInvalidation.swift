import EventLog
import PostgresClient

/// `locgate_events`: an append moved these streams to these versions. A cached device older
/// than that is dropped, so that the next gate loads the committed state from `device_states`,
/// and the push streams of the streams' apps (and users) are woken.
///
/// An append of this service (its payload starts with the service's origin line) is skipped:
/// `IngestCapability.ingest` stored the committed states in the cache and woke the push streams when
/// the append returned, and drops the devices of an append that failed (whose commit it cannot
/// be sure of). Parsing every own payload again was 1.6% of single-event ingest's server time;
/// the follower's listener now drops them as they arrive (`ownAppends`), and `apply` skips any
/// that still reach it.
struct DeviceCacheInvalidation: Sendable {
    let cache: DeviceStateCache
    let hub: ChangeHub
    /// `StreamChange.originLine` of this service's appends, as UTF-8.
    let ownOrigin: [UInt8]

    init(cache: DeviceStateCache, hub: ChangeHub, origin: String) {
        self.cache = cache
        self.hub = hub
        self.ownOrigin = Array(StreamChange.originLine(origin).utf8)
    }

    /// The notifications of this service's own appends, for the listener to drop: copying each
    /// and handing it to the follower's task was about 1% of single-event ingest's server time.
    var ownAppends: NotificationFilter {
        NotificationFilter(channel: ChangeChannel.streams.name, payloadPrefix: ownOrigin)
    }

    func apply(_ payload: String) {
        if StreamChange.isFrom(ownOrigin, payload: payload) { return }
        let changes = StreamChange.parse(payload)
        for change in changes {
            cache.removeIfOlder(change.stream, than: change.version)
        }
        hub.publish(changes)
    }
}
