import Foundation
import LocationAuthorization
@testable import LocationGateClient
import LocationGateTestKit
import Testing

/// SPEC I1: the installation's id is made once per queue directory, kept across launches, new
/// after a reinstall (the directory gone with the app), and carried by every `contextReported`
/// the queue stores and sends, without the app passing it.
@Suite("Install id: made once, kept, new after a reinstall, sent with every context", .timeLimit(.minutes(1)))
struct InstallIDTests {
    /// The top-level object of a queued event's stored JSON: what is sent, byte for byte.
    static func json(_ event: QueuedEvent) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: event.payload) as? [String: Any])
    }

    static func data(_ event: QueuedEvent) throws -> [String: Any] {
        try #require(try json(event)["data"] as? [String: Any])
    }

    /// The install id file's text.
    static func stored(_ directory: TemporaryDirectory) throws -> String {
        String(decoding: try Data(contentsOf: directory.file(QueueFiles.installIDName)), as: UTF8.self)
    }

    @Test("The first open makes a random lower-case UUID and writes it before the queue is usable; no temporary file is left")
    func firstOpenMakesTheID() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let queue = try EventQueue(directory: directory.url)
        defer { queue.close() }
        let id = queue.installId
        #expect(UUID(uuidString: id) != nil, "\(id) is not a UUID")
        #expect(id == id.lowercased())
        #expect(try Self.stored(directory) == id)
        #expect(!FileManager.default.fileExists(atPath: directory.file(QueueFiles.installIDWritingName).path))
    }

    @Test("The same installation keeps its id: every later open of the directory reads the same one, and the file is not rewritten")
    func sameInstallKeepsTheID() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let first = try EventQueue(directory: directory.url)
        let id = first.installId
        first.close()
        let written = try FileManager.default.attributesOfItem(atPath: directory.file(QueueFiles.installIDName).path)[.modificationDate] as? Date
        for _ in 0..<3 {
            let again = try EventQueue(directory: directory.url)
            #expect(again.installId == id)
            again.close()
        }
        #expect(try Self.stored(directory) == id)
        let after = try FileManager.default.attributesOfItem(atPath: directory.file(QueueFiles.installIDName).path)[.modificationDate] as? Date
        #expect(after == written)
    }

    @Test("A reinstall gets a new id: the directory wiped (deleting the app deletes it), the next open makes another")
    func wipedStorageGetsANewID() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let before = try EventQueue(directory: directory.url)
        let old = before.installId
        before.close()
        directory.remove()

        let after = try EventQueue(directory: directory.url)
        defer { after.close() }
        #expect(after.installId != old)
        #expect(UUID(uuidString: after.installId) != nil)
        #expect(try Self.stored(directory) == after.installId)
    }

    @Test(
        "A file that holds no valid id (empty, over 64 bytes, a control character, not UTF-8) is replaced by a new id",
        arguments: [[UInt8](), [UInt8](repeating: 0x61, count: 65), Array("4c1e\n".utf8), [0xC3, 0x28]])
    func invalidFileIsReplaced(content: [UInt8]) throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        try FileManager.default.createDirectory(at: directory.url, withIntermediateDirectories: true)
        try directory.write(content, to: QueueFiles.installIDName)

        let queue = try EventQueue(directory: directory.url)
        defer { queue.close() }
        #expect(UUID(uuidString: queue.installId) != nil)
        #expect(try directory.bytes(of: QueueFiles.installIDName) == Array(queue.installId.utf8))
    }

    @Test("A half-written id left by a crash is never used: the open writes a whole new one over it")
    func leftoverFromACrash() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        try FileManager.default.createDirectory(at: directory.url, withIntermediateDirectories: true)
        try directory.write(Array("7d3f0c".utf8), to: QueueFiles.installIDWritingName)

        let queue = try EventQueue(directory: directory.url)
        defer { queue.close() }
        #expect(UUID(uuidString: queue.installId) != nil)
        #expect(try Self.stored(directory) == queue.installId)
        #expect(!FileManager.default.fileExists(atPath: directory.file(QueueFiles.installIDWritingName).path))
    }

    @Test("A context recorded by the app carries installId in its data, stored and sent as such; its other fields are unchanged, and other events carry none")
    func contextCarriesTheID() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let queue = try EventQueue(directory: directory.url)
        let recorder = EventRecorder(userId: "u-1", deviceId: "d-1", queue: queue, clock: { ClientFixtures.time })
        let context = DeviceContext(
            platform: .iOS, osVersion: OSVersion(18, 0), appVersion: "3.1", usageDescriptions: [UsageDescriptionKey.whenInUse])
        let launched = try recorder.launched(context: context)
        guard case .contextReported(let read) = launched.event else {
            Issue.record("launched(context:) recorded \(launched.event)")
            return
        }
        #expect(read.platform == .iOS && read.osVersion == OSVersion(18, 0) && read.appVersion == "3.1")
        try recorder.appState(.foreground)
        // Any context appended, not only the recorder's.
        try queue.append(
            EventSubmission(id: UUID(), userId: "u-1", deviceId: "d-1", occurredAt: ClientFixtures.time, event: .contextReported(DeviceContext())))

        let events = queue.pendingEvents(limit: 10)
        try #require(events.count == 3)
        let data = try Self.data(events[0])
        #expect(data["installId"] as? String == queue.installId)
        #expect(data["platform"] as? String == "iOS")
        #expect(data["osVersion"] as? String == "18.0")
        #expect(data["appVersion"] as? String == "3.1")
        #expect(data["usageDescriptions"] as? [String] == [UsageDescriptionKey.whenInUse])
        #expect(try Self.json(events[0])["id"] as? String == launched.id.uuidString.lowercased())
        #expect(try Self.data(events[1])["installId"] == nil, "appStateChanged has no installId")
        #expect(try Self.data(events[2]).keys.sorted() == ["installId"])
        // What the server's decoder reads from the stored JSON is the event as recorded.
        #expect(try EventCoding.decode(EventSubmission.self, from: events[0].payload) == launched)

        // The request body is the stored JSON.
        let body = try #require(try JSONSerialization.jsonObject(with: EventSender.body(events)) as? [String: Any])
        let sent = try #require(body["events"] as? [[String: Any]])
        #expect((sent.first?["data"] as? [String: Any])?["installId"] as? String == queue.installId)

        // After a relaunch the stored context still carries the id, which is still the same.
        let id = queue.installId
        queue.close()
        let reopened = try EventQueue(directory: directory.url)
        defer { reopened.close() }
        #expect(reopened.installId == id)
        let pending = reopened.pendingEvents(limit: 10)
        try #require(pending.count == 3)
        #expect(try Self.data(pending[0])["installId"] as? String == id)
    }

    @Test("Two installations (two directories) send different ids; the next launch of each sends its own again")
    func eachInstallationSendsItsOwnID() throws {
        let first = TemporaryDirectory(), second = TemporaryDirectory()
        defer {
            first.remove()
            second.remove()
        }
        func launch(_ directory: TemporaryDirectory) throws -> String? {
            let queue = try EventQueue(directory: directory.url)
            defer { queue.close() }
            let recorder = EventRecorder(userId: "u-1", deviceId: "d-1", queue: queue)
            try recorder.launched(context: DeviceContext(platform: .iOS))
            let last = try #require(queue.pendingEvents(limit: .max).last)
            return try Self.data(last)["installId"] as? String
        }
        let one = try launch(first), two = try launch(second)
        #expect(one != nil && two != nil && one != two)
        #expect(try launch(first) == one)
        #expect(try launch(second) == two)
    }
}
