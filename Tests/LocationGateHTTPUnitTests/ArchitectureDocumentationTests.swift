import Foundation
import Testing

/// docs/architecture.md names the code it describes: every `Sources/...` path it gives is a file
/// or folder of the repository, and every type its tables name in backticks is declared in the
/// sources (`struct`, `class`, `enum`, `protocol`, `actor`, `typealias` or `extension NAME`) or
/// is a target of Package.swift. A rename or a removal that forgets the document fails here.
///
/// Only what looks like one of our type names is checked: UpperCamelCase (a capital first and a
/// lowercase letter somewhere, so `GET` and `PUT` are not), alone or as the start of a member
/// (`GateService.userDecision`, `DashboardPage.View`); file names (`OFREPEvaluation.swift`),
/// paths, flags and routes are not. Names that are not ours are listed in `foreign`.
@Suite("Docs: the paths and types architecture.md names exist")
struct ArchitectureDocumentationTests {
    static let document = "docs/architecture.md"

    /// Names the tables use that other code declares: Swift's, Foundation's, Hummingbird's, libpq's.
    static let foreign: Set<String> = [
        "Codable", "Clock", "Date", "UUID", "JSONDecoder", "JSONEncoder", "RouteCollection", "PQconnectdbParams",
    ]

    /// The text between each pair of backticks of `text`, in order.
    static func backticked(_ text: Substring) -> [Substring] {
        let pieces = text.split(separator: "`", omittingEmptySubsequences: false)
        return stride(from: 1, to: pieces.count, by: 2).map { pieces[$0] }
    }

    /// The type a backticked span names, or nil when it does not look like one of ours.
    static func typeName(_ span: Substring) -> Substring? {
        let pattern = #/([A-Z][A-Za-z0-9]*)(\.[A-Za-z_][A-Za-z0-9_]*)*(\(.*\))?/#
        guard !span.hasSuffix(".swift"), let match = span.wholeMatch(of: pattern) else { return nil }
        let name = match.output.1
        guard name.contains(where: \.isLowercase), !foreign.contains(String(name)) else { return nil }
        return name
    }

    /// Every name the sources declare a type of or extend, and every target of Package.swift.
    static func declared() throws -> Set<String> {
        let declaration = #/\b(?:struct|class|enum|protocol|actor|typealias|extension)\s+([A-Z][A-Za-z0-9_]*)/#
        var names = Set<String>()
        for folder in ["Sources", "Schema"] {
            for file in try RepositoryText.swiftFiles(under: folder) {
                for match in file.text.matches(of: declaration) { names.insert(String(match.output.1)) }
            }
        }
        let target = #/\.(?:target|executableTarget|systemLibrary|testTarget)\(\s*name:\s*"([^"]+)"/#
        for match in try RepositoryText.file("Package.swift").matches(of: target) { names.insert(String(match.output.1)) }
        return names
    }

    @Test("Every `Sources/...` path the document gives exists")
    func pathsExist() throws {
        let text = try RepositoryText.file(Self.document)
        let paths = Self.backticked(text[...]).filter { $0.hasPrefix("Sources/") && !$0.contains("*") }
        #expect(!paths.isEmpty, "the document's paths were found")
        for path in paths {
            let url = RepositoryText.root.appendingPathComponent(String(path))
            #expect(FileManager.default.fileExists(atPath: url.path), "\(Self.document) names \(path), which does not exist")
        }
    }

    @Test("Every type the document's tables name is declared in the sources or is a target")
    func tableTypesExist() throws {
        let rows = try RepositoryText.file(Self.document).split(separator: "\n").filter { $0.hasPrefix("|") }
        let named = Set(rows.flatMap { Self.backticked($0).compactMap(Self.typeName) }.map(String.init))
        #expect(named.count > 30, "the tables' type names were found: \(named.sorted())")
        #expect(named.contains("CatalogService") && named.contains("LocationGateHTTP"), "types and targets both read")
        let missing = named.subtracting(try Self.declared()).sorted()
        #expect(missing == [], "\(Self.document) names these in its tables, and no source declares them")
    }
}
