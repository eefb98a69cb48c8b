import Foundation
import LocationAuthorization
import LocationGateClient

/// A fresh directory under the system's temporary folder, removed by `remove()`.
struct TemporaryDirectory {
    let url: URL

    init() {
        url = FileManager.default.temporaryDirectory
            .appendingPathComponent("locgate-client-tests-\(UUID().uuidString.lowercased())")
    }

    func remove() {
        try? FileManager.default.removeItem(at: url)
    }

    /// A file of the queue's directory (`events.journal`, `events.acks`).
    func file(_ name: String) -> URL {
        url.appendingPathComponent(name)
    }

    func size(of name: String) throws -> Int {
        try Data(contentsOf: file(name)).count
    }

    func bytes(of name: String) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: file(name)))
    }

    func write(_ bytes: [UInt8], to name: String) throws {
        try Data(bytes).write(to: file(name))
    }

    /// Appends raw bytes to a file, as a crash in the middle of a write would leave them.
    func appendBytes(_ bytes: [UInt8], to name: String) throws {
        let handle = try FileHandle(forUpdating: file(name))
        _ = try handle.seekToEnd()
        try handle.write(contentsOf: bytes)
        try handle.close()
    }
}

enum ClientFixtures {
    /// Whole seconds, so that a time compares equal after its RFC 3339 round trip.
    static let time = Date(timeIntervalSince1970: 1_795_000_000)

    /// A submission for `device` that the reducer always accepts.
    static func submission(_ number: Int, device: String = "d-1") -> EventSubmission {
        EventSubmission(
            id: UUID(), userId: "u-1", deviceId: device, occurredAt: time.addingTimeInterval(Double(number)),
            event: number % 2 == 0 ? .appStateChanged(.foreground, backgroundIndicator: false) : .appStateChanged(.background, backgroundIndicator: false))
    }

    /// Opens a queue and appends `count` submissions; returns them as stored.
    static func filledQueue(_ directory: TemporaryDirectory, count: Int, compactionThreshold: Int = EventQueue.defaultCompactionThreshold) throws -> (EventQueue, [EventSubmission]) {
        let queue = try EventQueue(directory: directory.url, compactionThreshold: compactionThreshold)
        var stored: [EventSubmission] = []
        for number in 0..<count {
            stored.append(try queue.append(submission(number)))
        }
        return (queue, stored)
    }
}
