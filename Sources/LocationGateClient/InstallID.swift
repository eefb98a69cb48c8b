import Foundation
import LocationAuthorization

/// The app's own id of this installation (SPEC I1), which the queue adds to every
/// `contextReported` it stores, so that the app never has to pass it.
///
/// Deleting an app resets its location authorization, but the `deviceId` an app reports can
/// outlive a reinstall: `identifierForVendor` stays while another app of the same vendor is
/// installed, and Android's ANDROID_ID stays for good. The install id does not. It is a random
/// UUID, made the first time a queue opens its directory and kept in a file there
/// (`install-id`, beside the journal), inside the app's own container, which deleting the app
/// deletes. Every launch of the same installation reports the same id; a reinstall reports a new
/// one, and the server then resets the stream's authorization to a new install's.
enum InstallID {
    /// SPEC I1: 1 to 64 bytes with no control characters, bounded as `appVersion`.
    static let bytes = 1...64

    /// The id kept in the queue's directory; when there is none, a new one, on disk (the file
    /// and its name fsynced) before this returns, so that no event carries an id that a crash
    /// could take back.
    ///
    /// The queue calls it with the directory's lock held: two processes sharing the directory
    /// never make two ids. A file that does not hold an id is replaced, as a first launch would
    /// do; this code writes the file whole or not at all (a rename), so only something else
    /// could have left one.
    static func loadOrCreate(_ files: QueueFiles) throws(EventQueueError) -> String {
        if FileManager.default.fileExists(atPath: files.installID.path) {
            let stored = try QueueFiles.io("cannot read \(files.installID.path)") { try Data(contentsOf: files.installID) }
            if let text = String(data: stored, encoding: .utf8), isValid(text) {
                return text
            }
        }
        let id = UUID().uuidString.lowercased()
        try QueueFiles.io("cannot write \(files.installIDWriting.path)") {
            try Data(id.utf8).write(to: files.installIDWriting)
            let handle = try FileHandle(forUpdating: files.installIDWriting)
            defer { try? handle.close() }
            try handle.synchronize()
        }
        try QueueFiles.replace(files.installID, with: files.installIDWriting)
        try QueueFiles.synchronizeDirectory(files.directory)
        return id
    }

    /// Whether `text` is an install id the server accepts (SPEC §1's strings, I1's bounds).
    static func isValid(_ text: String) -> Bool {
        (try? ClientText.check(text, field: "installId", bytes: bytes)) != nil
    }
}
