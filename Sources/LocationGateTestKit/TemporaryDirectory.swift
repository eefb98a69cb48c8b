import Foundation

/// A fresh directory under the system's temporary folder, removed by `remove()`: where a test
/// keeps files (the client's on-disk queue) apart from every other test's.
public struct TemporaryDirectory: Sendable {
    public let url: URL

    /// Names a new directory; nothing is created until something writes under it.
    public init() {
        url = FileManager.default.temporaryDirectory
            .appendingPathComponent("locgate-client-tests-\(UUID().uuidString.lowercased())")
    }

    public func remove() {
        try? FileManager.default.removeItem(at: url)
    }

    /// A file of the directory (`events.journal`, `events.acks`).
    public func file(_ name: String) -> URL {
        url.appendingPathComponent(name)
    }

    public func size(of name: String) throws -> Int {
        try Data(contentsOf: file(name)).count
    }

    public func bytes(of name: String) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: file(name)))
    }

    public func write(_ bytes: [UInt8], to name: String) throws {
        try Data(bytes).write(to: file(name))
    }

    /// Appends raw bytes to a file, as a crash in the middle of a write would leave them.
    public func appendBytes(_ bytes: [UInt8], to name: String) throws {
        let handle = try FileHandle(forUpdating: file(name))
        _ = try handle.seekToEnd()
        try handle.write(contentsOf: bytes)
        try handle.close()
    }
}
