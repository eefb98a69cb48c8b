import HTTPTypes
import Hummingbird

/// The routes whose paths are made only of constant segments and whole-segment parameters
/// (`/v1/users/:user/devices/:device/gates/:feature`), found by comparing a request's
/// segments with each pattern of its length, in front of Hummingbird's trie.
///
/// The trie walks a node's children one by one, and for the gate (seven segments, three
/// parameters) cost several microseconds more than `/hello`'s one segment: a third of what the
/// gate spent above the trivial route. The index answers the same routes with the same
/// responders, and the same `context.parameters`, for the bytes of the path alone.
///
/// It only ever answers what the trie would: a pattern enters the index only if no other
/// registered pattern (wildcards included) could match a path it matches, so that the trie
/// could not have chosen another route for it. Anything the index does not hold (a pattern
/// that overlaps another, a wildcard, an empty segment, a method the path does not register)
/// goes to the trie unchanged, with its 404s.
struct RouteIndex: Sendable {
    /// One indexed path, with its responders by method.
    struct Route: Sendable {
        /// Each segment: a constant's bytes, or nil for a parameter.
        let segments: [[UInt8]?]
        /// The parameters' names, in the order of their segments.
        let names: [Substring]
        /// The path as registered (`/v1/users/{user}/...`): the route label of the metrics.
        let path: String
        let responders: [HTTPRequest.Method: any HTTPResponder<AppRequestContext>]
    }

    /// A path's route and its parameters.
    struct Match {
        let route: Route
        let responder: any HTTPResponder<AppRequestContext>
        /// The route's names and the path's values, as Hummingbird's trie would give them.
        let parameters: Parameters
    }

    /// The indexed routes by their number of segments.
    private let routesBySegments: [[Route]]

    /// What a route table registered, with the router's own middleware already around each
    /// responder (`RecordingRouter`).
    struct Registration {
        let path: RouterPath
        let method: HTTPRequest.Method
        let responder: any HTTPResponder<AppRequestContext>
    }

    init(_ registrations: [Registration]) {
        var byPath: [String: (pattern: [Segment], responders: [HTTPRequest.Method: any HTTPResponder<AppRequestContext>])] = [:]
        var order: [String] = []
        for registration in registrations {
            let key = registration.path.description
            if byPath[key] == nil {
                order.append(key)
                byPath[key] = (registration.path.components.map(Segment.init), [:])
            }
            byPath[key]?.responders[registration.method] = registration.responder
        }
        // Each pattern is read once here, not again for every pair compared below.
        let patterns = order.compactMap { key in byPath[key].map { (key, $0.pattern) } }
        var bySegments: [[Route]] = []
        for (key, pattern) in patterns {
            guard let responders = byPath[key]?.responders, !pattern.isEmpty, !pattern.contains(.other),
                !patterns.contains(where: { $0.0 != key && Self.overlaps(pattern, $0.1) })
            else { continue }
            while bySegments.count <= pattern.count { bySegments.append([]) }
            let segments = pattern.map { segment -> [UInt8]? in
                if case .constant(let constant) = segment { return Array(constant.utf8) }
                return nil
            }
            let names = pattern.compactMap { segment -> Substring? in
                if case .parameter(let name) = segment { return name }
                return nil
            }
            bySegments[pattern.count].append(Route(segments: segments, names: names, path: key, responders: responders))
        }
        self.routesBySegments = bySegments
    }

    /// The route and parameters for `path` and `method`, or nil for the trie to decide.
    func match(_ path: String, method: HTTPRequest.Method) -> Match? {
        // Over the path's contiguous UTF-8 bytes, by offset: a `String.UTF8View` index checks
        // and moves itself on every byte.
        var text = path
        return text.withUTF8 { bytes -> Match? in
            guard bytes.first == UInt8(ascii: "/") else { return nil }
            // The number of segments, none empty (the trie's splitting would skip it).
            var count = 0
            var previous = 0
            for index in 1..<bytes.count where bytes[index] == UInt8(ascii: "/") {
                guard index != previous + 1 else { return nil }
                count += 1
                previous = index
            }
            guard previous + 1 != bytes.count else { return nil }
            count += 1
            guard count < routesBySegments.count else { return nil }
            for route in routesBySegments[count] {
                guard let responder = route.responders[method] else { continue }
                if let values = Self.parameters(of: bytes, in: path, for: route) {
                    var parameters = Parameters()
                    for (name, value) in zip(route.names, values) { parameters.append(key: name, value: value) }
                    return Match(route: route, responder: responder, parameters: parameters)
                }
            }
            return nil
        }
    }

    /// The parameters of `path` (whose bytes are `bytes`) if its segments match `route`'s.
    private static func parameters(of bytes: UnsafeBufferPointer<UInt8>, in path: String, for route: Route) -> [Substring]? {
        var values: [Substring] = []
        values.reserveCapacity(route.names.count)
        var start = 1
        for segment in route.segments {
            var end = start
            while end != bytes.count, bytes[end] != UInt8(ascii: "/") { end += 1 }
            if let constant = segment {
                guard end - start == constant.count,
                    constant.withUnsafeBufferPointer({ $0.elementsEqual(UnsafeBufferPointer(rebasing: bytes[start..<end])) })
                else { return nil }
            } else {
                let utf8 = path.utf8
                values.append(Substring(utf8[utf8.index(utf8.startIndex, offsetBy: start)..<utf8.index(utf8.startIndex, offsetBy: end)]))
            }
            start = end == bytes.count ? end : end + 1
        }
        return values
    }

    /// Whether some path could match both patterns. A pattern with anything but constants and
    /// whole-segment parameters (a wildcard, a partial capture) is taken to overlap every
    /// pattern that agrees with it up to that element, whatever their lengths.
    static func overlaps(_ x: [Segment], _ y: [Segment]) -> Bool {
        for index in 0..<max(x.count, y.count) {
            guard index < x.count, index < y.count else {
                // One ran out: only something other than a constant or a parameter left on the
                // longer could still match the shorter's paths.
                return (index < x.count ? x[index...] : y[index...]).contains { $0 == .other }
            }
            switch (x[index], y[index]) {
            case (.constant(let left), .constant(let right)):
                if left != right { return false }
            case (.other, _), (_, .other):
                return true
            default:
                continue
            }
        }
        return true
    }

    /// A pattern's element as the index reads it, through `RouterPath.Element`'s public face:
    /// its text, confirmed by comparing it with the element that text describes.
    enum Segment: Equatable {
        case constant(Substring)
        case parameter(Substring)
        case other

        init(_ element: RouterPath.Element) {
            let text = Substring(element.description)
            if text.first == "{", text.last == "}", element == .capture(text.dropFirst().dropLast()) {
                self = .parameter(text.dropFirst().dropLast())
            } else if element == .path(text) {
                self = .constant(text)
            } else {
                self = .other
            }
        }
    }
}
