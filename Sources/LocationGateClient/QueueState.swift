import Foundation
import LocationAuthorization

/// What an open `EventQueue` knows: its open files and the pending events read from them. Only
/// ever touched under the queue's mutex.
///
/// The journal holds every event appended since the last compaction, acknowledged or not; the
/// acknowledgement file holds the ids the server acknowledged since then. Pending is the
/// journal minus the acknowledged ids, in journal order. Every change is one appended record,
/// fsynced before the call returns, so after a crash the files say exactly what the last
/// successful calls said.
struct QueueState {
    let files: QueueFiles
    /// The installation's id, read or made when the queue opened (`InstallID`, SPEC I1).
    let installID: String
    /// Kept open for the `flock` it holds.
    var lockHandle: FileHandle
    var journal: FileHandle
    var acks: FileHandle
    var pending: [QueuedEvent]
    var pendingIDs: Set<UUID>
    var pendingBytes: Int
    /// The ids in the acknowledgement file.
    var acknowledged: Set<UUID>
    /// The valid length of the journal: where the next record goes.
    var journalBytes: Int
    /// Records in the journal, pending or not: the rest are what a compaction would drop.
    var journalRecords: Int
    var acksBytes: Int
    /// Set when a failure left the files in a state this instance can no longer vouch for.
    var failure: EventQueueError?
    var isClosed = false

    /// Records in the journal that are no longer pending (acknowledged, or unreadable).
    var deadRecords: Int { journalRecords - pending.count }

    // MARK: - Opening

    /// Opens (creating if need be) the queue in `files.directory`, locks it, reads or makes the
    /// installation's id, cuts a torn tail off either file, and reads the pending events.
    static func open(_ files: QueueFiles) throws(EventQueueError) -> QueueState {
        try QueueFiles.io("cannot create \(files.directory.path)") {
            try FileManager.default.createDirectory(at: files.directory, withIntermediateDirectories: true)
        }
        _ = try QueueFiles.createIfMissing(files.lock)
        let lockHandle = try QueueFiles.io("cannot open \(files.lock.path)") { try FileHandle(forUpdating: files.lock) }
        guard QueueFiles.lockExclusively(lockHandle) else {
            try? lockHandle.close()
            throw EventQueueError.locked(files.directory.path)
        }
        do throws(EventQueueError) {
            // Under the lock, so that two processes sharing the directory never make two ids.
            let installID = try InstallID.loadOrCreate(files)
            return try read(files, lockHandle: lockHandle, installID: installID)
        } catch {
            try? lockHandle.close()
            throw error
        }
    }

    private static func read(_ files: QueueFiles, lockHandle: FileHandle, installID: String) throws(EventQueueError) -> QueueState {
        // A compaction that crashed before its rename left this; the journal beside it is whole.
        if FileManager.default.fileExists(atPath: files.compacting.path) {
            try QueueFiles.io("cannot remove \(files.compacting.path)") {
                try FileManager.default.removeItem(at: files.compacting)
            }
        }
        let createdJournal = try QueueFiles.createIfMissing(files.journal)
        let createdAcks = try QueueFiles.createIfMissing(files.acks)
        if createdJournal || createdAcks {
            try QueueFiles.synchronizeDirectory(files.directory)
        }

        // Acknowledgements first: they decide which journal records are still pending.
        let acksData = try QueueFiles.io("cannot read \(files.acks.path)") { try Data(contentsOf: files.acks) }
        let acksScan = QueueRecord.scan(acksData)
        var acknowledged: Set<UUID> = []
        var acksBytes = 0
        for payload in acksScan.payloads {
            // A whole record of the wrong length was not written by this code; stop there as at
            // any other damage, so that nothing after it is trusted.
            guard let ids = QueueRecord.ids(in: payload) else { break }
            acknowledged.formUnion(ids)
            acksBytes += QueueRecord.headerSize + payload.count
        }

        let journalData = try QueueFiles.io("cannot read \(files.journal.path)") { try Data(contentsOf: files.journal) }
        let journalScan = QueueRecord.scan(journalData)
        var pending: [QueuedEvent] = []
        var pendingIDs: Set<UUID> = []
        var pendingBytes = 0
        let decoder = JSONDecoder()
        for payload in journalScan.payloads {
            // A record whose checksum holds but whose JSON does not decode (written by a future
            // version, say) is skipped, not cut: the framing after it is intact.
            guard let submission = try? decoder.decode(EventSubmission.self, from: payload) else { continue }
            guard !acknowledged.contains(submission.id), !pendingIDs.contains(submission.id) else { continue }
            let event = QueuedEvent(submission: submission, payload: payload)
            pending.append(event)
            pendingIDs.insert(submission.id)
            pendingBytes += event.recordSize
        }

        let journal = try QueueFiles.io("cannot open \(files.journal.path)") { try FileHandle(forUpdating: files.journal) }
        let acks = try QueueFiles.io("cannot open \(files.acks.path)") { try FileHandle(forUpdating: files.acks) }
        // Cut a torn or damaged tail off, so that the next record starts where reading stops.
        if journalScan.validLength < journalData.count {
            try cut(journal, to: journalScan.validLength, name: files.journal.path)
        }
        if acksBytes < acksData.count {
            try cut(acks, to: acksBytes, name: files.acks.path)
        }
        return QueueState(
            files: files, installID: installID, lockHandle: lockHandle, journal: journal, acks: acks,
            pending: pending, pendingIDs: pendingIDs, pendingBytes: pendingBytes,
            acknowledged: acknowledged, journalBytes: journalScan.validLength,
            journalRecords: journalScan.payloads.count, acksBytes: acksBytes)
    }

    private static func cut(_ handle: FileHandle, to length: Int, name: String) throws(EventQueueError) {
        try QueueFiles.io("cannot truncate \(name)") {
            try handle.truncate(atOffset: UInt64(length))
            try handle.synchronize()
        }
    }

    // MARK: - Changes

    /// Throws when the queue is closed or an earlier failure made its state uncertain.
    func checkUsable() throws(EventQueueError) {
        if isClosed { throw EventQueueError.closed }
        if let failure { throw failure }
    }

    /// Appends one event's record and fsyncs it, unless the bounds or the id forbid it.
    mutating func append(_ event: QueuedEvent, maxEvents: Int, maxBytes: Int) throws(EventQueueError) {
        try checkUsable()
        let id = event.submission.id
        if pendingIDs.contains(id) || acknowledged.contains(id) {
            throw EventQueueError.duplicateID(id)
        }
        if pending.count + 1 > maxEvents || pendingBytes + event.recordSize > maxBytes {
            throw EventQueueError.full
        }
        let record = QueueRecord.frame(event.payload)
        try writeDurably(record, toJournal: true)
        journalBytes += record.count
        journalRecords += 1
        pending.append(event)
        pendingIDs.insert(id)
        pendingBytes += event.recordSize
    }

    /// Records the pending ones among `ids` as acknowledged; ids not pending are ignored.
    mutating func acknowledge(_ ids: [UUID]) throws(EventQueueError) {
        try checkUsable()
        var seen: Set<UUID> = []
        let fresh = ids.filter { pendingIDs.contains($0) && seen.insert($0).inserted }
        guard !fresh.isEmpty else { return }
        // One record per chunk: a batch's acknowledgement is all or nothing, and records stay
        // far below the framing's bound.
        var records = Data()
        var start = 0
        while start < fresh.count {
            let end = min(start + 4096, fresh.count)
            records.append(QueueRecord.frame(QueueRecord.idsPayload(Array(fresh[start..<end]))))
            start = end
        }
        try writeDurably(records, toJournal: false)
        acksBytes += records.count
        acknowledged.formUnion(fresh)
        let done = Set(fresh)
        pending.removeAll { done.contains($0.submission.id) }
        pendingIDs.subtract(done)
        pendingBytes = pending.reduce(0) { $0 + $1.recordSize }
    }

    /// Writes at the known end of a file and fsyncs. On failure the file is cut back to that end,
    /// so that the next record starts at a record boundary: a partial record in the middle would
    /// hide every record after it from the next open. When even that fails, the queue refuses
    /// further changes until it is opened again.
    private mutating func writeDurably(_ data: Data, toJournal: Bool) throws(EventQueueError) {
        let handle = toJournal ? journal : acks
        let offset = UInt64(toJournal ? journalBytes : acksBytes)
        let name = toJournal ? files.journal.path : files.acks.path
        do {
            try handle.seek(toOffset: offset)
            try handle.write(contentsOf: data)
            try handle.synchronize()
        } catch {
            do {
                try handle.truncate(atOffset: offset)
                try handle.synchronize()
            } catch let second {
                failure = EventQueueError.io("cannot cut \(name) back after a failed write: \(second)")
            }
            throw EventQueueError.io("cannot write \(name): \(error)")
        }
    }

    // MARK: - Compaction

    /// Rewrites the journal with the pending events alone, then empties the acknowledgement file.
    ///
    /// The order is what keeps both promises across a crash at any point:
    /// 1. the pending events go to a new file, fsynced (a crash here leaves the old journal and
    ///    the acknowledgements as they were; the new file is deleted on open);
    /// 2. the new file is renamed over the journal, atomically, and the directory fsynced (a crash
    ///    after this leaves the new journal and the old acknowledgements, whose ids are no longer
    ///    in the journal: harmless);
    /// 3. only then is the acknowledgement file emptied. Emptying it first could bring the old
    ///    journal back with nothing to say its events were acknowledged.
    mutating func compact() throws(EventQueueError) {
        try checkUsable()
        let manager = FileManager.default
        if manager.fileExists(atPath: files.compacting.path) {
            try? manager.removeItem(at: files.compacting)
        }
        var contents = Data(capacity: pendingBytes)
        for event in pending {
            contents.append(QueueRecord.frame(event.payload))
        }
        guard manager.createFile(atPath: files.compacting.path, contents: nil) else {
            throw EventQueueError.io("cannot create \(files.compacting.path)")
        }
        let next: FileHandle
        do {
            next = try FileHandle(forUpdating: files.compacting)
            try next.write(contentsOf: contents)
            try next.synchronize()
            try QueueFiles.replace(files.journal, with: files.compacting)
        } catch {
            try? manager.removeItem(at: files.compacting)
            throw EventQueueError.io("compaction failed: \(error)")
        }
        // The handle written to is now the journal's.
        try? journal.close()
        journal = next
        journalBytes = contents.count
        journalRecords = pending.count
        do {
            try QueueFiles.synchronizeDirectory(files.directory)
        } catch {
            // The rename may not be durable yet: keep the acknowledgements, which still cover
            // the old journal should it come back. They are harmless with the new one.
            return
        }
        do {
            try acks.truncate(atOffset: 0)
            try acks.synchronize()
            acksBytes = 0
            acknowledged = []
        } catch {
            let problem = EventQueueError.io("cannot empty \(files.acks.path) after a compaction: \(error)")
            failure = problem
            throw problem
        }
    }

    /// Compacts when more than `threshold` records are dead and they are most of the journal, so
    /// that the journal stays within about twice what is pending.
    mutating func compactIfNeeded(threshold: Int) {
        guard deadRecords > threshold, deadRecords * 2 > journalRecords else { return }
        // A failed compaction leaves the files as they were (or marks the queue failed, which the
        // next call reports); the acknowledgement that led here is durable either way.
        try? compact()
    }

    /// Closes the files, which also releases the lock.
    mutating func closeFiles() {
        guard !isClosed else { return }
        isClosed = true
        try? journal.close()
        try? acks.close()
        try? lockHandle.close()
    }
}
