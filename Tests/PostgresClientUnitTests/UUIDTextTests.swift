import Foundation
import PostgresClient
import Testing

/// The one hand-written UUID parser (PostgreSQL's text form, and the ids the batch reader reads
/// from clients) reads what `UUID(uuidString:)` reads, and nothing else; the formatters write
/// what `uuidString` writes.
@Suite("UUID text: the canonical form by hand", .timeLimit(.minutes(1)))
struct UUIDTextTests {
    @Test("Random UUIDs in either case read back equal; any other shape is refused")
    func agreesWithFoundation() {
        for _ in 0..<1_000 {
            let uuid = UUID()
            #expect(UUID(postgresUUIDText: uuid.uuidString) == uuid)
            #expect(UUID(postgresUUIDText: uuid.uuidString.lowercased()) == uuid)
        }
        let id = "5b1c2a4e-9f3d-4c2b-8a1e-0d2c3b4a5f6e"
        for bad in ["", "{\(id)}", String(id.dropLast()), id + "0", id.replacingOccurrences(of: "-", with: ""),
                    id.replacingOccurrences(of: "-", with: "_"), "5b1c2a4e-9f3d-4c2b-8a1e-0d2c3b4a5f6g", "5b1c2a4e9-f3d-4c2b-8a1e-0d2c3b4a5f6e"] {
            #expect(UUID(postgresUUIDText: bad) == nil, "\(bad)")
        }
    }

    @Test("The formatters write what uuidString writes, in each case")
    func formatsAsFoundation() {
        for _ in 0..<1_000 {
            let uuid = UUID()
            #expect(uuid.uppercasedText == uuid.uuidString)
            #expect(uuid.lowercasedText == uuid.uuidString.lowercased())
        }
    }
}
