import Foundation
import PostgresClient
import Testing

@testable import EventLog

@Suite("Stream changes: the NOTIFY payload's form", .timeLimit(.minutes(1)))
struct StreamChangeTests {
    @Test("Payloads split under the limit and parse back to the same changes, in order")
    func roundTrip() {
        let apps = [UUID(), UUID()]
        let changes = (0..<400).map { index in
            StreamChange(
                stream: StreamKey(appID: apps[index % 2], userID: "user.\(index)@x:y-z_", deviceID: "d-\(index)"),
                version: Int64(index) * 1_000_003)
        }
        let payloads = StreamChange.payloads(changes, limit: 1000)
        #expect(payloads.count > 1)
        #expect(payloads.allSatisfy { $0.utf8.count <= 1000 })
        #expect(payloads.flatMap(StreamChange.parse) == changes)
    }

    @Test("With an origin every payload starts with its line, stays under the limit, and parses to the same changes")
    func origin() {
        let app = UUID()
        let changes = (0..<300).map { StreamChange(stream: StreamKey(appID: app, userID: "u", deviceID: "d-\($0)"), version: Int64($0)) }
        let origin = UUID().lowercasedText
        let line = Array(StreamChange.originLine(origin).utf8)
        let payloads = StreamChange.payloads(changes, origin: origin, limit: 1000)
        #expect(payloads.count > 1)
        #expect(payloads.allSatisfy { $0.utf8.count <= 1000 && StreamChange.isFrom(line, payload: $0) })
        #expect(payloads.flatMap(StreamChange.parse) == changes)
        #expect(!StreamChange.isFrom(Array(StreamChange.originLine(UUID().lowercasedText).utf8), payload: payloads[0]))
        #expect(StreamChange.payloads(changes).allSatisfy { !StreamChange.isFrom(line, payload: $0) })
        #expect(StreamChange.payloads([], origin: origin).isEmpty)
    }

    @Test("Lines that do not parse are skipped, the others kept")
    func oddLines() {
        let app = UUID()
        let good = "\(app.lowercasedText)\tu\td\t7"
        let payload = [good, "not-a-uuid\tu\td\t1", "\(app.lowercasedText)\tu\td", "\(app.lowercasedText)\tu\td\tx", "", "\(app.uuidString)\tv\te\t8"]
            .joined(separator: "\n")
        #expect(StreamChange.parse(payload) == [
            StreamChange(stream: StreamKey(appID: app, userID: "u", deviceID: "d"), version: 7),
            StreamChange(stream: StreamKey(appID: app, userID: "v", deviceID: "e"), version: 8),
        ])
    }
}
