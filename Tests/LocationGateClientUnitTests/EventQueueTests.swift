import Foundation
import LocationAuthorization
@testable import LocationGateClient
import LocationGateTestKit
import Testing

/// SPEC §10: the queue keeps every event until acknowledged, across crashes and relaunches,
/// bounded in size. Crashes are simulated by writing to the files what a crash leaves there.
@Suite("EventQueue: durable, bounded, crash-safe", .timeLimit(.minutes(2)))
struct EventQueueTests {
    let journal = QueueFiles.journalName
    let acks = QueueFiles.acksName

    @Test("CRC-32 is the IEEE one: 123456789 gives CBF43926")
    func crc32() {
        #expect(CRC32.checksum(Array("123456789".utf8)) == 0xCBF4_3926)
        #expect(CRC32.checksum([UInt8]()) == 0)
    }

    @Test("Appended and acknowledged events survive a reopen, in order")
    func roundTrip() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let (queue, stored) = try ClientFixtures.filledQueue(directory, count: 5)
        #expect(queue.pending() == stored)
        #expect(queue.pending(limit: 2) == Array(stored.prefix(2)))
        try queue.acknowledge(ids: [stored[1].id, stored[3].id])
        #expect(queue.pending() == [stored[0], stored[2], stored[4]])
        queue.close()

        let reopened = try EventQueue(directory: directory.url)
        defer { reopened.close() }
        #expect(reopened.pending() == [stored[0], stored[2], stored[4]])
        #expect(reopened.count == 3)
        #expect(reopened.byteCount > 0)
    }

    @Test(
        "A torn record at the end of the journal is cut off on open; the whole ones before it are intact",
        arguments: [
            [UInt8](repeating: 0, count: 3),  // a header cut short
            [0, 0, 0, 200, 1, 2, 3, 4] + [UInt8](repeating: 0x7B, count: 10),  // a payload cut short
            [UInt8](repeating: 0, count: 64),  // blocks the file system allocated but never wrote
        ])
    func tornTail(tail: [UInt8]) throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let (queue, stored) = try ClientFixtures.filledQueue(directory, count: 3)
        queue.close()
        let whole = try directory.size(of: journal)
        try directory.appendBytes(tail, to: journal)

        let reopened = try EventQueue(directory: directory.url)
        #expect(reopened.pending() == stored)
        #expect(try directory.size(of: journal) == whole)
        // The next record starts where the whole ones end, so it is read back as well.
        let next = try reopened.append(ClientFixtures.submission(3))
        reopened.close()
        let again = try EventQueue(directory: directory.url)
        defer { again.close() }
        #expect(again.pending() == stored + [next])
    }

    @Test("A record whose checksum fails stops reading there: the records before it are kept, the file is cut there")
    func corruptChecksum() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let (queue, stored) = try ClientFixtures.filledQueue(directory, count: 3)
        queue.close()
        var bytes = try directory.bytes(of: journal)
        let firstLength = Int(bytes[0]) << 24 | Int(bytes[1]) << 16 | Int(bytes[2]) << 8 | Int(bytes[3])
        let second = QueueRecord.headerSize + firstLength
        bytes[second + QueueRecord.headerSize + 5] ^= 0x01  // one bit of the second event's JSON
        try directory.write(bytes, to: journal)

        let reopened = try EventQueue(directory: directory.url)
        defer { reopened.close() }
        #expect(reopened.pending() == [stored[0]])
        #expect(try directory.size(of: journal) == second)
    }

    @Test("Acknowledged events never come back, also after a torn acknowledgement record")
    func acknowledgedStayGone() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let (queue, stored) = try ClientFixtures.filledQueue(directory, count: 10)
        try queue.acknowledge(ids: stored.prefix(6).map(\.id))
        queue.close()
        try directory.appendBytes([0, 0, 0, 16, 9, 9, 9], to: acks)

        let reopened = try EventQueue(directory: directory.url)
        #expect(reopened.pending() == Array(stored.suffix(4)))
        // The torn record was cut, so this acknowledgement is read back after it.
        try reopened.acknowledge(ids: [stored[6].id])
        reopened.close()

        let again = try EventQueue(directory: directory.url)
        defer { again.close() }
        #expect(again.pending() == Array(stored.suffix(3)))
        // An acknowledged id cannot be queued again: the server would answer the old event's result.
        #expect(throws: EventQueueError.duplicateID(stored[0].id)) { try again.append(stored[0]) }
        #expect(throws: EventQueueError.duplicateID(stored[9].id)) { try again.append(stored[9]) }
    }

    @Test("Compaction keeps exactly the pending events, in order, and empties the acknowledgements")
    func compaction() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let (queue, stored) = try ClientFixtures.filledQueue(directory, count: 20, compactionThreshold: 5)
        let journalBefore = try directory.size(of: journal)

        // Three dead records of twenty: below the threshold, nothing is rewritten.
        try queue.acknowledge(ids: [stored[0].id, stored[1].id, stored[2].id])
        #expect(try directory.size(of: journal) == journalBefore)

        // Twelve dead of twenty: over the threshold and over half, so the journal is rewritten.
        let dead = Set(stored.indices.filter { $0 < 4 || $0 % 2 == 0 })
        try queue.acknowledge(ids: dead.map { stored[$0].id })
        let remaining = stored.indices.filter { !dead.contains($0) }.map { stored[$0] }
        #expect(remaining.count == 8)
        #expect(queue.pending() == remaining)
        #expect(try directory.size(of: journal) == queue.byteCount)
        #expect(try directory.size(of: acks) == 0)

        // Appends after a compaction land in the new journal.
        let late = try queue.append(ClientFixtures.submission(20))
        queue.close()
        let reopened = try EventQueue(directory: directory.url)
        defer { reopened.close() }
        #expect(reopened.pending() == remaining + [late])
    }

    @Test("A crash between the journal's rename and the acknowledgements' reset loses nothing and brings nothing back")
    func crashAfterRename() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let (queue, stored) = try ClientFixtures.filledQueue(directory, count: 10)
        try queue.acknowledge(ids: stored.prefix(6).map(\.id))
        let leftover = try directory.bytes(of: acks)
        try queue.compact()
        queue.close()
        // As if the process died after the rename, before the acknowledgements were emptied.
        try directory.write(leftover, to: acks)

        let reopened = try EventQueue(directory: directory.url)
        #expect(reopened.pending() == Array(stored.suffix(4)))
        try reopened.acknowledge(ids: [stored[6].id])
        reopened.close()
        let again = try EventQueue(directory: directory.url)
        defer { again.close() }
        #expect(again.pending() == Array(stored.suffix(3)))
    }

    @Test("A crash before the rename leaves the old journal in force; the half-written new one is deleted")
    func crashBeforeRename() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let (queue, stored) = try ClientFixtures.filledQueue(directory, count: 4)
        try queue.acknowledge(ids: [stored[0].id])
        queue.close()
        try directory.write([0, 0, 0, 9, 1, 2], to: QueueFiles.compactingName)

        let reopened = try EventQueue(directory: directory.url)
        defer { reopened.close() }
        #expect(reopened.pending() == Array(stored.suffix(3)))
        #expect(!FileManager.default.fileExists(atPath: directory.file(QueueFiles.compactingName).path))
    }

    @Test("Beyond maxEvents an append throws .full and stores nothing; acknowledging makes room")
    func maxEvents() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let queue = try EventQueue(directory: directory.url, maxEvents: 3)
        var stored: [EventSubmission] = []
        for number in 0..<3 {
            stored.append(try queue.append(ClientFixtures.submission(number)))
        }
        let size = try directory.size(of: journal)
        #expect(throws: EventQueueError.full) { try queue.append(ClientFixtures.submission(3)) }
        #expect(queue.pending() == stored)
        #expect(try directory.size(of: journal) == size)

        try queue.acknowledge(ids: [stored[0].id])
        let next = try queue.append(ClientFixtures.submission(4))
        queue.close()
        let reopened = try EventQueue(directory: directory.url, maxEvents: 3)
        defer { reopened.close() }
        #expect(reopened.pending() == [stored[1], stored[2], next])
    }

    @Test("Beyond maxBytes an append throws .full and stores nothing")
    func maxBytes() throws {
        let measure = TemporaryDirectory()
        defer { measure.remove() }
        let probe = try EventQueue(directory: measure.url)
        try probe.append(ClientFixtures.submission(0))
        let one = probe.byteCount
        probe.close()

        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let queue = try EventQueue(directory: directory.url, maxBytes: one + one / 2)
        defer { queue.close() }
        let first = try queue.append(ClientFixtures.submission(0))
        let size = try directory.size(of: journal)
        #expect(throws: EventQueueError.full) { try queue.append(ClientFixtures.submission(1)) }
        #expect(queue.pending() == [first])
        #expect(try directory.size(of: journal) == size)
    }

    @Test("An event no server would accept is refused at append, naming the field, and nothing is stored")
    func invalidEvent() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let queue = try EventQueue(directory: directory.url)
        defer { queue.close() }
        var bad = ClientFixtures.submission(0)
        bad.userId = "not an id"
        do {
            try queue.append(bad)
            Issue.record("an invalid userId was queued")
        } catch EventQueueError.invalidEvent(let message) {
            #expect(message.contains("userId"))
        } catch {
            Issue.record("unexpected \(error)")
        }
        #expect(queue.isEmpty)
        #expect(try directory.size(of: journal) == 0)
    }

    @Test("A second queue on an open directory is refused; closing releases it, and a closed queue refuses changes")
    func exclusive() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let first = try EventQueue(directory: directory.url)
        do {
            let second = try EventQueue(directory: directory.url)
            second.close()
            Issue.record("the directory was opened twice")
        } catch EventQueueError.locked {
        } catch {
            Issue.record("unexpected \(error)")
        }
        first.close()
        #expect(throws: EventQueueError.closed) { try first.append(ClientFixtures.submission(0)) }
        let third = try EventQueue(directory: directory.url)
        third.close()
    }
}
