import Crypto
import Foundation

/// A new owner-only file: every file the archive commands write (an archive, the plain CSV of
/// `locgate archive read`, an upgraded archive) and `locgate export --output` holds tenants'
/// events.
///
/// The file is created with its final mode from the start and never reopened by path: it is
/// made in the destination's folder under a temporary name of its own with
/// `O_CREAT | O_EXCL | O_NOFOLLOW` and mode 0600 (so no other user can open it between its
/// creation and a chmod, and a symlink planted at that name is refused, not followed), written
/// through that descriptor alone, its SHA-256 and size counted as it is written, and synced.
/// Only then does `finish` give it its name, atomically: a hard link that fails when anything
/// (a file, a symlink) holds the name, so an existing destination is refused, never followed
/// or overwritten; or, for a file rewritten in place (`replacing`), a rename over the old one,
/// which replaces a symlink there rather than writing through it. The folder is synced after.
/// A writer dropped before `finish` removes its temporary file.
final class ArchiveWriter {
    /// The name the file gets from `finish`.
    let path: String
    /// Where it is written until then.
    let temporaryPath: String
    private let directory: String
    private let replacing: Bool
    private let handle: FileHandle
    private var hasher = SHA256()
    private var closed = false
    /// Whether the file has its name: from then on it is the caller's, not a temporary one.
    private(set) var placed = false
    private(set) var bytes = 0

    /// Creates the temporary file for `path`. Without `replacing`, an existing `path` (a
    /// symlink included, dangling or not) is refused at once.
    init(path: String, replacing: Bool = false) throws {
        let directory = (path as NSString).deletingLastPathComponent
        let name = (path as NSString).lastPathComponent
        guard !name.isEmpty else { throw ArchiveFileError.unreadable("\(path) names no file") }
        if !replacing, Self.entryExists(path) {
            throw ArchiveFileError.unreadable("\(path) exists: an archive command never replaces a file it did not write")
        }
        let folder = directory.isEmpty ? "." : directory
        var descriptor: Int32 = -1
        var temporary = ""
        // A fresh random name each time: one already taken (planted) is never used.
        for _ in 0..<8 where descriptor < 0 {
            temporary = (folder as NSString).appendingPathComponent(".\(name).\(UUID().uuidString.lowercased()).partial")
            descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode_t(0o600))
            if descriptor < 0, errno != EEXIST { break }
        }
        guard descriptor >= 0 else {
            throw ArchiveFileError.unreadable("cannot create a file in \(folder) (errno \(errno))")
        }
        // The mode exactly, whatever the umask: on the descriptor, never by path.
        guard fchmod(descriptor, mode_t(0o600)) == 0 else {
            let failure = errno
            close(descriptor)
            unlink(temporary)
            throw ArchiveFileError.unreadable("cannot set the mode of a file in \(folder) (errno \(failure))")
        }
        self.path = path
        self.directory = folder
        self.replacing = replacing
        self.temporaryPath = temporary
        self.handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
    }

    deinit { abandon() }

    func write(_ text: String) throws {
        try write(data: Data(text.utf8))
    }

    /// Bytes already encoded (a person's export, written a page at a time).
    func write(_ content: [UInt8]) throws {
        try write(data: Data(content))
    }

    private func write(data: Data) throws {
        hasher.update(data: data)
        bytes += data.count
        try handle.write(contentsOf: data)
    }

    /// Syncs and closes the file, gives it its name, syncs the folder; its SHA-256 in hex.
    func finish() throws -> String {
        try handle.synchronize()
        closed = true
        try handle.close()
        if replacing {
            guard rename(temporaryPath, path) == 0 else {
                throw ArchiveFileError.unreadable("cannot rename the new file to \(path) (errno \(errno))")
            }
        } else if link(temporaryPath, path) == 0 {
            unlink(temporaryPath)
        } else {
            let failure = errno
            if failure == EEXIST {
                throw ArchiveFileError.unreadable("\(path) exists: an archive command never replaces a file it did not write")
            }
            // A file system without hard links: the name is checked, then taken by a rename.
            guard failure == EPERM || failure == EOPNOTSUPP, !Self.entryExists(path), rename(temporaryPath, path) == 0 else {
                throw ArchiveFileError.unreadable("cannot name the new file \(path) (errno \(failure))")
            }
        }
        placed = true
        try EventArchive.synchronizeDirectory(directory)
        return Self.hex(hasher.finalize())
    }

    /// Closes the file without syncing it, unless `finish` did, and removes it unless it has
    /// its name (a write that failed).
    func abandon() {
        if !closed {
            closed = true
            try? handle.close()
        }
        if !placed { unlink(temporaryPath) }
    }

    /// Whether anything holds `path`, a symlink included (not followed).
    static func entryExists(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0
    }

    static func hex(_ digest: SHA256.Digest) -> String {
        digest.map { String(format: "%02x", $0) }.joined()
    }
}
