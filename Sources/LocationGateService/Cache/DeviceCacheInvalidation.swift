import EventLog

/// `locgate_events`: an append moved these streams to these versions. A cached device older
/// than that is dropped, so that the next gate loads the committed state from `device_states`,
/// and the push streams of the streams' apps (and users) are woken.
struct DeviceCacheInvalidation: Sendable {
    let cache: DeviceStateCache
    let hub: ChangeHub

    func apply(_ payload: String) {
        let changes = StreamChange.parse(payload)
        for change in changes {
            cache.removeIfOlder(change.stream, than: change.version)
        }
        hub.publish(changes)
    }
}
