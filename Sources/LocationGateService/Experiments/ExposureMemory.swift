import EventLog
import Foundation
import LocationAuthorization
import Synchronization

/// What this process knows of devices' exposures (SPEC §16), so that an evaluation of a device
/// exposed before answers from memory, as a gate does: the exposure of each (app, experiment,
/// stream, installation) it has read or recorded, and each stream's `installId` at a version.
///
/// Why the installation too: the gate's device cache keeps no `installId` (`DeviceState`'s
/// comment says why), and the unit depends on it (`ExperimentUnit`). A stream's `installId` is
/// read from `device_states` once per version of the stream, and every version after that
/// answers from here until the stream moves.
///
/// An exposure never changes once recorded, so an entry is never stale while its experiment
/// and its unit stand. What can take them away is handled where it happens:
/// - an experiment deleted (or replaced after a delete under the same key): every change of an
///   app's experiments drops the app's exposures here (`forget(appID:)`, from the catalog's
///   invalidation, on every server);
/// - an erasure: its devices are forgotten here as in the device cache (`forget(streams:)`);
/// - I1's reinstall: the entry is filed under the `installId` it was read with, so a new one
///   misses it; and an exposure under the stream's own unit (`device:`) is remembered only
///   while the stream has no `installId`, since a reinstall replaces it without moving the key.
/// A lost notification empties everything (`removeAll`, on the catalog's resync).
///
/// Bounded as the feature catalog is: at most `maxEntries` of each kind, emptied when full
/// (entries are cheap to read again). A read that raced an invalidation stores nothing (an
/// epoch, as the device cache's tickets).
public final class ExposureMemory: Sendable {
    /// Exposures, and streams' installations, remembered at most.
    public static let maxEntries = 100_000

    /// One remembered exposure's place: the experiment, and the `installId` the stream had when
    /// it was read (nil: none).
    struct Slot: Hashable, Sendable {
        var experiment: String
        var installID: String?
    }

    /// A stream's `installId` as of `version`.
    struct Installation: Sendable {
        var version: Int64
        var installID: String?
    }

    private struct State {
        var exposures: [UUID: [StreamKey: [Slot: ExperimentExposure]]] = [:]
        var exposureCount = 0
        var installations: [StreamKey: Installation] = [:]
        var epoch: UInt64 = 0
    }

    private let state = Mutex(State())

    public init() {}

    /// The epoch a read takes before it queries the database; `remember` stores nothing when
    /// it moved.
    var epoch: UInt64 { state.withLock { $0.epoch } }

    func exposure(_ stream: StreamKey, experiment: String, installID: String?) -> ExperimentExposure? {
        state.withLock { $0.exposures[stream.appID]?[stream]?[Slot(experiment: experiment, installID: installID)] }
    }

    func remember(_ exposure: ExperimentExposure, stream: StreamKey, experiment: String, installID: String?, epoch: UInt64) {
        state.withLock { state in
            guard state.epoch == epoch else { return }
            if state.exposureCount >= Self.maxEntries {
                state.exposures = [:]
                state.exposureCount = 0
            }
            let slot = Slot(experiment: experiment, installID: installID)
            if state.exposures[stream.appID, default: [:]][stream, default: [:]].updateValue(exposure, forKey: slot) == nil {
                state.exposureCount += 1
            }
        }
    }

    /// The stream's `installId` when known as of `version` or later.
    func installation(_ stream: StreamKey, atLeast version: Int64) -> Installation? {
        state.withLock { state in
            guard let known = state.installations[stream], known.version >= version else { return nil }
            return known
        }
    }

    func remember(_ installation: Installation, stream: StreamKey, epoch: UInt64) {
        state.withLock { state in
            guard state.epoch == epoch else { return }
            if let known = state.installations[stream], known.version > installation.version { return }
            if state.installations.count >= Self.maxEntries { state.installations = [:] }
            state.installations[stream] = installation
        }
    }

    /// An app's experiments changed: its exposures are read again.
    func forget(appID: UUID) {
        state.withLock { state in
            state.epoch &+= 1
            if let removed = state.exposures.removeValue(forKey: appID) {
                state.exposureCount -= removed.values.reduce(0) { $0 + $1.count }
            }
        }
    }

    /// Erased devices: nothing of them is remembered.
    func forget(streams: [StreamKey]) {
        guard !streams.isEmpty else { return }
        state.withLock { state in
            state.epoch &+= 1
            for stream in streams {
                state.installations.removeValue(forKey: stream)
                if let removed = state.exposures[stream.appID]?.removeValue(forKey: stream) {
                    state.exposureCount -= removed.count
                }
            }
        }
    }

    /// Notifications may have been missed: everything is read again.
    func removeAll() {
        state.withLock { state in
            state.epoch &+= 1
            state.exposures = [:]
            state.exposureCount = 0
            state.installations = [:]
        }
    }
}
