import Foundation
import Testing

@testable import LocationGateHTTP

/// The binary carries the dashboard's templates as Swift source (`EmbeddedTemplates`, written by
/// `Deploy/generate`), so that it serves wherever it is copied. A template changed without
/// running the generator would ship the old page.
@Suite("Dashboard: the templates the binary carries")
struct EmbeddedTemplatesTests {
    @Test("The embedded templates are Dashboard/Templates/*.mustache byte for byte (else run `bash Deploy/generate`)")
    func embeddedMatchTheFiles() throws {
        let folder = RepositoryText.root.appendingPathComponent("Sources/LocationGateHTTP/Dashboard/Templates")
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".mustache") }.sorted()
        #expect(EmbeddedTemplates.files.map(\.name) == names, "run `bash Deploy/generate`")
        for file in EmbeddedTemplates.files {
            let text = try RepositoryText.file("Sources/LocationGateHTTP/Dashboard/Templates/\(file.name)")
            #expect(Array(file.text.utf8) == Array(text.utf8), "\(file.name) differs from its embedded text: run `bash Deploy/generate`")
        }
        // And they parse, with every template a page names.
        _ = try DashboardTemplates(files: EmbeddedTemplates.files)
    }
}
