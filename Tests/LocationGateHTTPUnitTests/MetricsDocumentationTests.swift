import Foundation
import Testing

/// Every metric the code registers is in docs/operations.md's metrics table, and every metric
/// the table lists is one the code registers. The code's metrics are found in its sources: each
/// is made with a literal label (`Counter(label: "..."`, `Gauge`, `Timer`, `Recorder`, `Meter`),
/// named for Prometheus as swift-prometheus names it (a character outside `[A-Za-z0-9_:]`
/// becomes `_`: `hb.requests` is `hb_requests`).
@Suite("Docs: the metrics the code registers are the ones operations.md lists")
struct MetricsDocumentationTests {
    static func registered() throws -> Set<String> {
        let pattern = #/(?:Counter|Gauge|Timer|Recorder|Meter)\(\s*label:\s*"([^"]+)"/#
        var names = Set<String>()
        for file in try RepositoryText.swiftFiles(under: "Sources") {
            for match in file.text.matches(of: pattern) { names.insert(prometheusName(String(match.output.1))) }
        }
        return names
    }

    static func prometheusName(_ label: String) -> String {
        String(label.map { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == ":") ? $0 : "_" })
    }

    /// The first column of the table under `| metric | type | meaning |`, without backticks
    /// and without the dimensions written after a name (`locgate_rejections_total{code}`).
    static func documented() throws -> Set<String> {
        let lines = try RepositoryText.file("docs/operations.md").split(separator: "\n", omittingEmptySubsequences: false)
        guard let header = lines.firstIndex(where: { $0.hasPrefix("| metric | type | meaning |") }) else { return [] }
        var names = Set<String>()
        for line in lines[(header + 2)...] {
            guard line.hasPrefix("|") else { break }
            let cell = line.split(separator: "|", omittingEmptySubsequences: true).first ?? ""
            let name = cell.trimmingCharacters(in: .whitespaces).replacingOccurrences(of: "`", with: "")
            names.insert(String(name.prefix { $0 != "{" }))
        }
        return names
    }

    @Test("Registered and documented metrics are the same set")
    func sameMetrics() throws {
        let registered = try Self.registered(), documented = try Self.documented()
        #expect(registered.count > 20, "the sources' metrics were found: \(registered.sorted())")
        #expect(registered.subtracting(documented).sorted() == [], "registered, missing from docs/operations.md's table")
        #expect(documented.subtracting(registered).sorted() == [], "in docs/operations.md's table, registered nowhere")
    }
}
