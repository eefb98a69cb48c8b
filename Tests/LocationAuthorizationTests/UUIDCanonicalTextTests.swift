import Foundation
import LocationAuthorization
import Testing

/// The batch reader's UUID parser reads what `UUID(uuidString:)` reads, and nothing else.
@Suite("UUID text: the canonical form by hand", .timeLimit(.minutes(1)))
struct UUIDCanonicalTextTests {
    @Test("Random UUIDs in either case read back equal; any other shape is refused")
    func agreesWithFoundation() {
        for _ in 0..<1_000 {
            let uuid = UUID()
            #expect(UUID(canonicalText: uuid.uuidString) == uuid)
            #expect(UUID(canonicalText: uuid.uuidString.lowercased()) == uuid)
        }
        let id = "5b1c2a4e-9f3d-4c2b-8a1e-0d2c3b4a5f6e"
        for bad in ["", "{\(id)}", String(id.dropLast()), id + "0", id.replacingOccurrences(of: "-", with: ""),
                    id.replacingOccurrences(of: "-", with: "_"), "5b1c2a4e-9f3d-4c2b-8a1e-0d2c3b4a5f6g", "5b1c2a4e9-f3d-4c2b-8a1e-0d2c3b4a5f6e"] {
            #expect(UUID(canonicalText: bad) == nil, "\(bad)")
        }
    }
}
