import Foundation

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The files of one queue directory, and the few POSIX calls Foundation has no durable form of:
/// a directory's fsync (which makes a create or a rename survive a power cut), an atomic
/// rename over an existing file, and an advisory lock.
struct QueueFiles {
    static let journalName = "events.journal"
    static let acksName = "events.acks"
    static let compactingName = "events.journal.compacting"
    static let lockName = "lock"
    static let installIDName = "install-id"
    static let installIDWritingName = "install-id.writing"

    let directory: URL

    /// Every event ever appended since the last compaction, in order.
    var journal: URL { directory.appendingPathComponent(Self.journalName) }
    /// The ids the server has acknowledged since the last compaction.
    var acks: URL { directory.appendingPathComponent(Self.acksName) }
    /// The next journal while a compaction writes it; a leftover one is from a crash and unused.
    var compacting: URL { directory.appendingPathComponent(Self.compactingName) }
    /// Held with `flock` while a queue has the directory open.
    var lock: URL { directory.appendingPathComponent(Self.lockName) }
    /// The installation's id (`InstallID`, SPEC I1), written once, at the first open.
    var installID: URL { directory.appendingPathComponent(Self.installIDName) }
    /// The id while it is written; renamed to `installID` once on disk. A leftover one is from a
    /// crash and is written over.
    var installIDWriting: URL { directory.appendingPathComponent(Self.installIDWritingName) }

    /// Creates `url` empty unless it exists; true when it was created.
    static func createIfMissing(_ url: URL) throws(EventQueueError) -> Bool {
        if FileManager.default.fileExists(atPath: url.path) { return false }
        guard FileManager.default.createFile(atPath: url.path, contents: nil) else {
            throw EventQueueError.io("cannot create \(url.path)")
        }
        return true
    }

    /// fsync of the directory itself, so that files created or renamed in it stay so after a crash.
    static func synchronizeDirectory(_ directory: URL) throws(EventQueueError) {
        let descriptor = open(directory.path, O_RDONLY)
        guard descriptor >= 0 else { throw EventQueueError.io("cannot open \(directory.path): \(lastError())") }
        defer { _ = close(descriptor) }
        guard fsync(descriptor) == 0 else { throw EventQueueError.io("fsync of \(directory.path) failed: \(lastError())") }
    }

    /// POSIX rename: replaces `destination` atomically, which FileManager's move does not.
    static func replace(_ destination: URL, with source: URL) throws(EventQueueError) {
        guard rename(source.path, destination.path) == 0 else {
            throw EventQueueError.io("cannot rename \(source.lastPathComponent) over \(destination.lastPathComponent): \(lastError())")
        }
    }

    /// An exclusive, non-blocking `flock` on the open file; false when someone else holds it.
    /// `flock` locks belong to the open file, so a second queue in the same process is refused too,
    /// and the lock goes away with the file handle, also when the process dies.
    static func lockExclusively(_ handle: FileHandle) -> Bool {
        flock(handle.fileDescriptor, LOCK_EX | LOCK_NB) == 0
    }

    static func lastError() -> String {
        String(cString: strerror(errno))
    }

    /// Runs a Foundation file operation, turning its untyped error into `EventQueueError.io`.
    static func io<Value>(_ what: String, _ body: () throws -> Value) throws(EventQueueError) -> Value {
        do {
            return try body()
        } catch {
            throw EventQueueError.io("\(what): \(error)")
        }
    }
}
