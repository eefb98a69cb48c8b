import Foundation
import LocationAuthorization
import Synchronization

/// A durable, bounded, on-disk queue of the events an app recorded and the server has not yet
/// acknowledged (SPEC §10).
///
/// An event is on disk, fsynced, before `append(_:)` returns, and stays there until
/// `acknowledge(ids:)` says the server has it: a crash, a kill or a relaunch in between loses
/// nothing, and an acknowledged event never comes back. Because each event keeps the id it was
/// given when recorded, re-sending after a crash is safe: the server answers `duplicate` for
/// the ones it already stored (SPEC §1).
///
/// The directory holds an append-only journal of events and an append-only file of
/// acknowledged ids, both as length-and-CRC framed records (`QueueRecord`); opening cuts off a
/// torn tail left by a crash. When acknowledged records outnumber pending ones (and exceed
/// `compactionThreshold`), the journal is rewritten with the pending ones alone, so the files
/// stay within about twice the bounds.
///
/// The directory also keeps the installation's id (`installId`, SPEC I1) in a file of its own,
/// made at the first open; every `contextReported` appended carries it.
///
/// Calls are synchronous, so that a Core Location delegate callback can record before it
/// returns; each change costs one fsync, done under a lock. Use one queue per directory: a
/// second one on the same directory, in this process or another, is refused with `.locked`.
public final class EventQueue: Sendable {
    /// 5 MiB: months of a typical app's authorization events.
    public static let defaultMaxBytes = 5 * 1024 * 1024
    /// 10,000 events.
    public static let defaultMaxEvents = 10_000
    /// Compaction waits for this many acknowledged records, so that it stays rare.
    public static let defaultCompactionThreshold = 1_000

    /// Where the files are.
    public let directory: URL
    /// The most bytes the pending events may take in the journal.
    public let maxBytes: Int
    /// The most events that may be pending.
    public let maxEvents: Int
    /// How many acknowledged records the journal keeps before a compaction may drop them.
    public let compactionThreshold: Int
    /// The app's own id of this installation (SPEC I1): a random UUID made the first time a queue
    /// opens `directory`, kept in a file there, and the same at every later open. Deleting the
    /// app deletes the directory, so a reinstall gets a new one. `append(_:)` adds it to the
    /// `data` of every `contextReported`, which lets the server tell a reinstall (the
    /// authorization reset) from a relaunch even when `deviceId` outlives the app.
    public let installId: String

    private let state: Mutex<QueueState>

    /// Opens the queue in `directory`, creating it if need be, reads the installation's id (making
    /// it at the first open) and reads what is pending.
    ///
    /// On iOS put it in Application Support (not Caches, which the system may empty: a new
    /// install id would read as a reinstall) and keep the default data protection,
    /// `completeUntilFirstUserAuthentication`, if the app records events while launched in the
    /// background before the first unlock.
    public init(
        directory: URL,
        maxBytes: Int = EventQueue.defaultMaxBytes,
        maxEvents: Int = EventQueue.defaultMaxEvents,
        compactionThreshold: Int = EventQueue.defaultCompactionThreshold
    ) throws(EventQueueError) {
        self.directory = directory
        self.maxBytes = maxBytes
        self.maxEvents = maxEvents
        self.compactionThreshold = compactionThreshold
        let opened = try QueueState.open(QueueFiles(directory: directory))
        self.installId = opened.installID
        self.state = Mutex(opened)
    }

    deinit {
        state.withLock { $0.closeFiles() }
    }

    /// Stores `submission` durably and returns it as stored (its time at the millisecond
    /// precision of RFC 3339, as the server will see it). A `contextReported` is stored and sent
    /// with `installId` in its `data`.
    ///
    /// Throws `.full` when the queue is at its bounds (nothing is stored: see `EventQueueError.full`
    /// for why the new event is the one to drop), `.invalidEvent` when no server would accept
    /// the event, `.duplicateID` when its id is already in use.
    @discardableResult
    public func append(_ submission: EventSubmission) throws(EventQueueError) -> EventSubmission {
        let event = try Self.encode(submission, installId: installId)
        let (maxEvents, maxBytes) = (self.maxEvents, self.maxBytes)
        try state.withLock { (state) throws(EventQueueError) -> Void in
            try state.append(event, maxEvents: maxEvents, maxBytes: maxBytes)
        }
        return event.submission
    }

    /// The oldest pending events, in the order they were appended: the order the server must
    /// apply them in.
    public func pending(limit: Int = .max) -> [EventSubmission] {
        state.withLock { state in state.pending.prefix(max(0, limit)).map(\.submission) }
    }

    /// Records that the server has these events, durably; they are never returned again, also
    /// after a crash or a reopen. Ids that are not pending are ignored.
    public func acknowledge(ids: some Sequence<UUID>) throws(EventQueueError) {
        let ids = Array(ids)
        let threshold = compactionThreshold
        try state.withLock { (state) throws(EventQueueError) -> Void in
            try state.acknowledge(ids)
            state.compactIfNeeded(threshold: threshold)
        }
    }

    /// Rewrites the journal with the pending events alone. Acknowledging compacts by itself when
    /// it pays; this is for tests and for apps that want the space back at once.
    public func compact() throws(EventQueueError) {
        try state.withLock { (state) throws(EventQueueError) -> Void in
            try state.compact()
        }
    }

    /// How many events are pending.
    public var count: Int { state.withLock { $0.pending.count } }

    /// Whether nothing is pending.
    public var isEmpty: Bool { count == 0 }

    /// The bytes the pending events take in the journal, which `maxBytes` bounds.
    public var byteCount: Int { state.withLock { $0.pendingBytes } }

    /// Closes the files and releases the directory, so that another queue may open it. Later
    /// changes throw `.closed`.
    public func close() {
        state.withLock { $0.closeFiles() }
    }

    // MARK: - For the sender

    /// The oldest pending events with their stored JSON.
    func pendingEvents(limit: Int) -> [QueuedEvent] {
        state.withLock { state in Array(state.pending.prefix(max(0, limit))) }
    }

    /// The JSON an event is stored and sent as, checked by reading it back the way the server
    /// will, so that an event no server would accept fails here, at the call that made it. A
    /// context gets `installId` in its `data` (SPEC I1).
    static func encode(_ submission: EventSubmission, installId: String) throws(EventQueueError) -> QueuedEvent {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        var submission = submission
        if case .contextReported(var context) = submission.event, context.installID == nil {
            context.installID = installId
            submission.event = .contextReported(context)
        }
        let payload: Data
        do {
            payload = try encoder.encode(submission)
        } catch {
            throw EventQueueError.invalidEvent("\(error)")
        }
        guard payload.count <= QueueRecord.maxPayload else {
            throw EventQueueError.invalidEvent("the event's JSON is larger than \(QueueRecord.maxPayload) bytes")
        }
        let stored: EventSubmission
        do {
            stored = try EventCoding.decode(EventSubmission.self, from: payload)
        } catch {
            // EventValidationError's description is its message, which names the field.
            throw EventQueueError.invalidEvent("\(error)")
        }
        return QueuedEvent(submission: stored, payload: payload)
    }
}
