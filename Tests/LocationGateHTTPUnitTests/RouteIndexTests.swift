import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import Testing

@testable import LocationGateHTTP

/// The route index in front of Hummingbird's trie answers every request as the trie alone
/// would: the same route, the same parameters, the same 404s, for the server's own paths and
/// for patterns that overlap.
@Suite("Routing: the route index answers as the trie does")
struct RouteIndexTests {
    /// The server's routes as the sources register them, each under the area its collection is
    /// mounted on in `buildRouter` (the OFREP collections on `/ofrep/v1`, the dashboard's pages
    /// on `/dashboard`, health and `/hello` at the root with their full paths, every other
    /// collection on `/v1`), and the catch-alls of the areas that have one. The list the router
    /// itself keeps is compared with openapi.yaml by `RouteDocumentationTests`, which builds the
    /// server's router over a service (an integration test).
    static func serverRoutes() throws -> [(method: HTTPRequest.Method, path: String)] {
        let pattern = #/\.(get|post|put|delete|patch)\(\s*"(/[^"]*)"/#
        var routes: [(HTTPRequest.Method, String)] = []
        for file in try RepositoryText.swiftFiles(under: "Sources/LocationGateHTTP") {
            let name = URL(fileURLWithPath: file.path).lastPathComponent
            let area = if file.path.contains("/Dashboard/") {
                "/dashboard"
            } else if name.hasPrefix("OFREP") {
                "/ofrep/v1"
            } else if name == "HealthRoutes.swift" || name == "Application+build.swift" {
                ""
            } else {
                "/v1"
            }
            for match in file.text.matches(of: pattern) {
                guard let method = HTTPRequest.Method(match.output.1.uppercased()) else { continue }
                routes.append((method, area + String(match.output.2)))
            }
        }
        for area in ["/ofrep/v1", "/dashboard"] {
            for method in [HTTPRequest.Method.get, .post, .put, .delete, .patch] { routes.append((method, area + "/**")) }
        }
        return routes
    }

    /// Patterns that overlap: a constant beside a parameter, a wildcard beside a constant.
    static let overlapping: [(method: HTTPRequest.Method, path: String)] = [
        (.get, "/a/b"), (.get, "/a/:x"), (.get, "/a/:x/c"), (.get, "/w/**"), (.get, "/w/x/:y"),
        (.get, "/p/{name}.json"), (.get, "/p/:x/q"), (.put, "/a/:x/c"),
    ]

    /// A router whose every route answers with its label and its parameters.
    static func echo(_ routes: [(method: HTTPRequest.Method, path: String)]) -> (IndexedRouter, Router<AppRequestContext>) {
        let indexedRouter = IndexedRouter(router: Router(context: AppRequestContext.self))
        let plain = Router(context: AppRequestContext.self)
        var seen = Set<String>()
        for (method, path) in routes where seen.insert("\(method) \(path)").inserted {
            // The pattern's parameters, read as handlers read them.
            let names = path.split(separator: "/").compactMap { segment -> String? in
                if segment.hasPrefix(":") { return String(segment.dropFirst()) }
                if segment.hasPrefix("{"), segment.hasSuffix("}") { return String(segment.dropFirst().dropLast()) }
                return nil
            }
            let responder = CallbackResponder<AppRequestContext> { _, context in
                let parameters = names.map { "\($0)=\(context.parameters.get($0) ?? "-")" }.joined(separator: ",")
                return Response(
                    status: .ok, body: .init(byteBuffer: ByteBuffer(string: "\(context.endpointPath ?? "-") \(parameters)")))
            }
            indexedRouter.recorder.on(RouterPath(path), method: method, responder: responder)
            plain.on(RouterPath(path), method: method, responder: responder)
        }
        return (indexedRouter, plain)
    }

    /// Each pattern made concrete (parameters and wildcards as words), and near misses.
    static func requests(for routes: [(method: HTTPRequest.Method, path: String)]) -> [String] {
        var paths: [String] = ["/", "", "/nowhere", "//", "/v1", "/v1/"]
        for (_, path) in routes {
            var counter = 0
            let concrete = path.split(separator: "/").map { segment -> String in
                guard segment.contains(":") || segment.contains("{") || segment.contains("*") else { return String(segment) }
                counter += 1
                return segment.hasSuffix(".json") ? "v\(counter).json" : "v\(counter)"
            }.joined(separator: "/")
            paths += ["/" + concrete, "/" + concrete + "/", "//" + concrete, "/" + concrete + "/extra",
                      "/" + concrete.replacingOccurrences(of: "/", with: "//"), "/" + concrete.uppercased(),
                      "/" + concrete + "/b/c", "/" + concrete.split(separator: "/").dropLast().joined(separator: "/")]
        }
        return Array(Set(paths)).sorted()
    }

    /// Every request against both routers: the same status and body.
    static func compare(_ routes: [(method: HTTPRequest.Method, path: String)]) async throws {
        let (indexed, plain) = echo(routes)
        let paths = requests(for: routes)
        let methods: [HTTPRequest.Method] = [.get, .post, .put, .delete, .patch, .head, .options]
        /// Each request's `status body` from one router.
        func answers<Builder: HTTPResponderBuilder>(_ router: Builder) async throws -> [String] where Builder.Responder.Context == AppRequestContext {
            try await Application(router: router, logger: Logger(label: "route-index")).test(.router) { client in
                var answers: [String] = []
                for path in paths {
                    for method in methods {
                        answers.append(try await client.execute(uri: path, method: method) { response in
                            "\(method) \(path): \(response.status.code) \(String(buffer: response.body))"
                        })
                    }
                }
                return answers
            }
        }
        let (throughTrie, throughIndex) = (try await answers(plain), try await answers(indexed))
        #expect(throughTrie.count == paths.count * methods.count)
        #expect(throughTrie.filter { $0.contains(": 200 ") }.count > paths.count / 8, "many requests reached a route")
        for (trie, index) in zip(throughTrie, throughIndex) { #expect(index == trie) }
    }

    @Test("The server's routes, made concrete and missed by a segment, answer the same through the index and the trie")
    func serverRoutesAnswerAlike() async throws {
        let routes = try Self.serverRoutes()
        #expect(routes.count > 40, "the sources' routes were found")
        try await Self.compare(routes)
    }

    @Test("Overlapping patterns are left to the trie and answer the same")
    func overlappingAnswerAlike() async throws {
        try await Self.compare(Self.overlapping)
    }

    @Test("The index holds the gate's route and none that another pattern could also match")
    func whatTheIndexHolds() throws {
        let index = RouteIndex(try Self.serverRoutes().map {
            RouteIndex.Registration(path: RouterPath($0.path), method: $0.method, responder: CallbackResponder<AppRequestContext> { _, _ in Response(status: .ok) })
        })
        let gate = index.match("/v1/users/u-1/devices/d%201/gates/nearby", method: .get)
        #expect(gate?.route.path == "/v1/users/{user}/devices/{device}/gates/{feature}")
        #expect(gate.map { $0.parameters.map { "\($0.key)=\($0.value)" } } == ["user=u-1", "device=d%201", "feature=nearby"])
        #expect(gate?.parameters["device"] == "d%201" && gate?.parameters["nothing"] == nil)
        #expect(index.match("/v1/events", method: .post)?.route.path == "/v1/events")
        #expect(index.match("/v1/users/u-1/devices/d/gates/nearby", method: .head) == nil, "a method the path does not register")
        #expect(index.match("/v1/users/u-1/devices//gates/nearby", method: .get) == nil, "an empty segment")
        #expect(index.match("/ofrep/v1/evaluate/flags", method: .post) == nil, "under a catch-all")
        #expect(index.match("/dashboard/features/x", method: .get) == nil, "under a catch-all")

        let overlapping = RouteIndex(Self.overlapping.map {
            RouteIndex.Registration(path: RouterPath($0.path), method: $0.method, responder: CallbackResponder<AppRequestContext> { _, _ in Response(status: .ok) })
        })
        for path in ["/a/b", "/a/x", "/w/x/y", "/p/x/q"] {
            #expect(overlapping.match(path, method: .get) == nil, "\(path) overlaps another pattern")
        }
        #expect(overlapping.match("/a/x/c", method: .put)?.route.path == "/a/{x}/c")
    }
}
