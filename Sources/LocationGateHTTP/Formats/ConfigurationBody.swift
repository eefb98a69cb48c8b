import Foundation
import LocationAuthorization
import LocationGateJSON
import LocationGateService

/// A configuration body read strictly (SPEC §14): a member the API does not define for the
/// body is a 422 `validationFailed` naming it, before anything is decoded or stored, so that a
/// misspelt or unsupported setting never looks accepted. Configuration bodies are those of
/// apps, keys, retention and gate queries (a feature's body has its own reader).
///
/// Event data is not a configuration body: fields an event's `data` does not know stay ignored
/// and unstored, so that newer clients work with older servers.
///
/// The members are read with `JSONNode`; the value is then decoded with `Codable`, whose
/// errors name the field (400 `invalidRequest` for a missing or mistyped one, in the API's
/// terms). The order of the answers: not JSON (400 `malformedJSON`); then, member by member in
/// document order, one given twice in its object (400 `invalidRequest`) or one the body does
/// not define (422); then the decoder's.
enum ConfigurationBody {
    /// The members an object may hold and, for a member whose value is an object or an array
    /// of objects, the members those may hold in turn.
    struct Shape: Sendable, ExpressibleByArrayLiteral {
        var fields: Set<String>
        var nested: [String: Shape]

        init(_ fields: Set<String>, nested: [String: Shape] = [:]) {
            self.fields = fields.union(nested.keys)
            self.nested = nested
        }

        init(arrayLiteral elements: String...) {
            self.init(Set(elements))
        }
    }

    /// `POST /v1/apps`: `{"name"}`.
    static let app: Shape = ["name"]
    /// `POST /v1/keys`: `{"scope", "deviceBound"}`.
    static let key: Shape = ["scope", "deviceBound"]
    /// `PUT /v1/apps/{appId}/retention`: `{"days"}`.
    static let retention: Shape = ["days"]
    /// `PUT /v1/features/{key}` and its preview: the feature without its key (SPEC §4, §11, §15).
    static let feature: Shape = ["requires", "services", "accuracy", "description", "delivery", "background", "disabled", "minAppVersion"]
    /// `POST /v1/gates/query`: `{"devices": [{"userId", "deviceId"}], "features"}`.
    static let gateQuery = Shape(["features"], nested: ["devices": ["userId", "deviceId"]])

    /// Decodes `type` from `data` after checking its members against `shape`.
    static func decode<Value: Decodable>(_ type: Value.Type, from data: Data, shape: Shape) throws(APIError) -> Value {
        guard let root = JSONNode.parse(bytes: Array(data)) else {
            // Not JSON as `JSONNode` reads it: the decoder says why. Should it read the body
            // all the same (nested deeper than `JSONNode` goes), the members cannot be checked.
            _ = try decodeValue(type, from: data)
            throw APIError(.invalidRequest, "the body nests deeper than this request's body can")
        }
        try check(root, shape: shape, path: "", index: nil)
        return try decodeValue(type, from: data)
    }

    /// Checks `data`'s members against `shape` alone, for a body another reader decodes (a
    /// feature's, `FeatureCatalog.parseDefinition`). Not JSON: left to that reader.
    static func checkMembers(of data: Data, shape: Shape) throws(APIError) {
        guard let root = JSONNode.parse(bytes: Array(data)) else { return }
        try check(root, shape: shape, path: "", index: nil)
    }

    /// Decodes `type` from `data`, a flat object whose members may only be `fields`.
    static func decode<Value: Decodable>(_ type: Value.Type, from data: Data, fields: Set<String>) throws(APIError) -> Value {
        try decode(type, from: data, shape: Shape(fields))
    }

    /// `Codable`'s decoding with SPEC §5's 400 codes.
    private static func decodeValue<Value: Decodable>(_ type: Value.Type, from data: Data) throws(APIError) -> Value {
        do {
            return try EventCoding.decode(type, from: data)
        } catch {
            throw APIError(error.kind == .malformedJSON ? .malformedJSON : .invalidRequest, error.message)
        }
    }

    /// Checks an object's members against `shape`, and those of the objects `shape` names
    /// (in arrays too). A value that is not an object is left to the decoder, which names the
    /// wrong type. `index`: a member of the body holding an array (a gate query's `devices`)
    /// puts each element's position in the error, as SPEC §5's `index`.
    private static func check(_ node: JSONNode, shape: Shape, path: String, index: Int?) throws(APIError) {
        guard let members = node.members else { return }
        var seen = Set<String>()
        for member in members {
            let field = path.isEmpty ? member.key : "\(path).\(member.key)"
            guard seen.insert(member.key).inserted else {
                throw APIError(.invalidRequest, "\(field.prefix(128)): given twice", index: index)
            }
            guard shape.fields.contains(member.key) else {
                let known = shape.fields.sorted().joined(separator: ", ")
                throw APIError(
                    .validationFailed, "\(field.prefix(128)): not a field of this request (its fields: \(known))", index: index)
            }
        }
        for member in members {
            guard let nested = shape.nested[member.key] else { continue }
            let field = path.isEmpty ? member.key : "\(path).\(member.key)"
            if let items = member.value.array {
                for (position, item) in items.enumerated() {
                    try check(item, shape: nested, path: "\(field)[\(position)]", index: index ?? (path.isEmpty ? position : nil))
                }
            } else {
                try check(member.value, shape: nested, path: field, index: index)
            }
        }
    }
}
