import Foundation
import Testing

/// Every route the server registers is a path and method of openapi.yaml, and every path and
/// method openapi.yaml describes is registered. The routes are found where they are registered
/// with their full paths (`read.get("/v1/...", use: ...)` in a route collection's scope group,
/// `routes.get("/v1/...", use: ...)` on a `RouteTable`, in Sources/LocationGateHTTP), with their
/// parameters (`:user`) compared as openapi.yaml's (`{u}`), by position only.
@Suite("Docs: the routes the server registers are the ones openapi.yaml describes")
struct RouteDocumentationTests {
    /// Registered but deliberately not in openapi.yaml: the dashboard's HTML pages (not an API;
    /// docs/dashboard.md) and the trivial route the benchmarks compare against.
    static func undocumented(_ route: String) -> Bool {
        let path = route.drop { $0 != " " }.dropFirst()
        return path == "/hello" || path == "/dashboard" || path.hasPrefix("/dashboard/")
    }

    /// `METHOD /path` with every parameter written `{}`.
    static func normalized(method: Substring, path: Substring) -> String {
        let segments = path.split(separator: "/", omittingEmptySubsequences: false).map { segment -> Substring in
            segment.hasPrefix(":") || (segment.hasPrefix("{") && segment.hasSuffix("}")) ? "{}" : segment
        }
        return method.uppercased() + " " + segments.joined(separator: "/")
    }

    static func registered() throws -> Set<String> {
        let pattern = #/\.(get|post|put|delete|patch)\(\s*"(/[^"]*)"/#
        var routes = Set<String>()
        for file in try RepositoryText.swiftFiles(under: "Sources/LocationGateHTTP") {
            for match in file.text.matches(of: pattern) { routes.insert(normalized(method: match.output.1, path: match.output.2)) }
        }
        return routes
    }

    /// The operations under openapi.yaml's `paths:`: a path at two spaces, its methods at four.
    static func documented() throws -> Set<String> {
        let lines = try RepositoryText.file("openapi.yaml").split(separator: "\n", omittingEmptySubsequences: false)
        guard let start = lines.firstIndex(of: "paths:") else { return [] }
        let methods: Set<Substring> = ["get", "post", "put", "delete", "patch"]
        var routes = Set<String>()
        var path: Substring?
        for line in lines[(start + 1)...] {
            if let first = line.first, first != " ", first != "#" { break }
            if line.hasPrefix("  /"), !line.hasPrefix("   "), line.hasSuffix(":") {
                path = line.dropFirst(2).dropLast()
            } else if line.hasPrefix("    "), !line.hasPrefix("     "), let path {
                let key = line.dropFirst(4).prefix { $0 != ":" }
                if methods.contains(key) { routes.insert(normalized(method: key, path: path)) }
            }
        }
        return routes
    }

    @Test("Registered and documented operations are the same, the dashboard and /hello excepted")
    func sameRoutes() throws {
        let registered = try Self.registered().filter { !Self.undocumented($0) }, documented = try Self.documented()
        #expect(registered.count > 20, "the sources' routes were found: \(registered.sorted())")
        #expect(registered.subtracting(documented).sorted() == [], "registered, missing from openapi.yaml")
        #expect(documented.subtracting(registered).sorted() == [], "in openapi.yaml, registered nowhere")
    }
}
