import Foundation
import Hummingbird
import LocationGateService

/// A request's query parameters, each given at most once (SPEC §14): `?from=a&from=b` is a 400
/// `invalidRequest` naming `from`, never read as whichever came first. `QueryParametersMiddleware`
/// refuses such a query on every address before anything else runs; this is also the reader of
/// query parameters for the routes (analytics, history, state, the audit trail, the change
/// feed), so that a route tested without that middleware refuses the same.
///
/// Values are percent-decoded as Hummingbird decodes them (`+` stays `+`); names are
/// percent-decoded too, so that `%66rom` is `from` and counts as a repeat of it. A segment
/// without a name (`?&a=1`, `?=x`) is ignored.
struct QueryParameters: Sendable {
    private let values: [String: String]
    /// The parameters in the order given (names percent-decoded).
    let pairs: [(String, String)]

    /// The parameters of a request's query.
    init(of request: Request) throws(ServiceError) {
        try self.init(pairs: request.uri.queryParameters.map { (String($0.key), String($0.value)) })
    }

    /// Parameters as (name, value) pairs in the order given.
    init(pairs: [(String, String)]) throws(ServiceError) {
        var values: [String: String] = [:]
        var kept: [(String, String)] = []
        for (rawName, value) in pairs {
            let name = rawName.utf8.contains(UInt8(ascii: "%")) ? rawName.removingPercentEncoding ?? rawName : rawName
            guard !name.isEmpty else { continue }
            guard values.updateValue(value, forKey: name) == nil else {
                throw ServiceError(.invalidRequest, "\(name.prefix(64)): given twice; give each query parameter at most once")
            }
            kept.append((name, value))
        }
        self.values = values
        self.pairs = kept
    }

    /// The value of `name`, or nil when it was not given.
    subscript(_ name: String) -> String? { values[name] }

    /// The value of `name`, or nil when it was not given (as Hummingbird's `get`).
    func get(_ name: String) -> String? { values[name] }

    /// Whether `name` was given (with any value, the empty one included).
    func has(_ name: String) -> Bool { values[name] != nil }

    /// The names given, sorted.
    var names: [String] { values.keys.sorted() }
}
