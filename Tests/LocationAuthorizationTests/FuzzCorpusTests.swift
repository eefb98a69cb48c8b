import Foundation
import LocationAuthorizationFuzzing
import Testing

/// Every input of the fuzz corpus (the seeds, and each crash the fuzzer found, kept as a file
/// once fixed) runs through the fuzz target in the ordinary test run: a fixed crash stays fixed.
@Suite("Fuzz corpus replay", .timeLimit(.minutes(1)))
struct FuzzCorpusTests {
    static var corpus: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("FuzzCorpus")
    }

    @Test("Every kept input runs through decoding, the reducer, the gates and the stored forms without a trap")
    func replay() throws {
        let files = try FileManager.default.contentsOfDirectory(at: Self.corpus, includingPropertiesForKeys: nil)
        #expect(files.count >= 3)
        for file in files {
            let reached = EventFuzzing.run(Array(try Data(contentsOf: file)))
            if file.lastPathComponent.hasPrefix("seed-") { #expect(reached == 5, "\(file.lastPathComponent)") }
        }
    }

    @Test("Any byte string at all runs through the target without a trap")
    func arbitraryBytes() {
        var generator = SystemRandomNumberGenerator()
        for length in 0..<300 {
            EventFuzzing.run((0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) })
        }
        EventFuzzing.run(Array(#"{"events": [{"type": "contextReported", "data": {"appVersion": "a\u0000"}}]}"#.utf8))
    }
}
