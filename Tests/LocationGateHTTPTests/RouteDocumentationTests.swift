import Foundation
import HTTPTypes
import LocationGateService
import Logging
import PostgresClient
import Testing

@testable import LocationGateHTTP

/// Every route the server registers is a path and method of openapi.yaml, and every path and
/// method openapi.yaml describes is registered. The routes are the ones the server's router
/// registers, with their full paths, their parameters (`{user}`) compared as openapi.yaml's
/// (`{u}`), by position only. Here rather than among the unit tests because the router is built
/// over a service, whose pool (never connected) a unit target may not make.
@Suite("Docs: the routes the server registers are the ones openapi.yaml describes")
struct RouteDocumentationTests {
    /// The repository's root, from this file's path (Tests/LocationGateHTTPTests/).
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

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

    /// The routes the server's own router registers (`buildRouter`, as `locgate serve` builds
    /// it), over a service whose pool never connects: building routes reads no database.
    static func registered() throws -> Set<String> {
        let logger = Logger(label: "route-documentation-tests")
        let pool = PostgresConnectionPool(configuration: PostgresConfiguration(connectionString: "postgresql://nobody@127.0.0.1:1/none"), logger: logger)
        let router = buildRouter(service: GateService(pool: pool, logger: logger), follower: nil, configuration: ServerConfiguration(), registry: nil)
        return Set(router.routes.map { normalized(method: Substring($0.method.rawValue), path: Substring($0.path)) })
    }

    /// The operations under openapi.yaml's `paths:`: a path at two spaces, its methods at four.
    static func documented() throws -> Set<String> {
        let lines = try String(contentsOf: Self.repository.appendingPathComponent("openapi.yaml"), encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
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
