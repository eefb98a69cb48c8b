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
/// terms). The order of the answers: not JSON (400 `malformedJSON`); then an object anywhere in
/// the body that names a member twice (400 `invalidRequest`, RFC 7493; `ClientJSON`); then,
/// member by member in document order, one the body does not define (422) or a `null` where
/// the field takes a value (422: only a field whose GET shows null takes one); then the
/// decoder's.
enum ConfigurationBody {
    /// The members an object may hold and, for a member whose value is an object or an array
    /// of objects, the members those may hold in turn; `nullable`, the fields that take `null`
    /// (those GET shows as null).
    struct Shape: Sendable, ExpressibleByArrayLiteral {
        var fields: Set<String>
        var nested: [String: Shape]
        var nullable: Set<String>

        init(_ fields: Set<String>, nested: [String: Shape] = [:], nullable: Set<String> = []) {
            self.fields = fields.union(nested.keys)
            self.nested = nested
            self.nullable = nullable
        }

        init(arrayLiteral elements: String...) {
            self.init(Set(elements))
        }
    }

    /// `POST /v1/apps`: `{"name"}`.
    static let app: Shape = ["name"]
    /// `POST /v1/keys`: `{"scope", "deviceBound"}`.
    static let key: Shape = ["scope", "deviceBound"]
    /// `PUT /v1/apps/{appId}/retention`: `{"days"}`, null to keep everything.
    static let retention = Shape(["days"], nullable: ["days"])
    /// `PUT /v1/features/{key}` and its preview: the feature without its key (SPEC §4, §11, §15);
    /// `minAppVersion` may be null (no floor), as GET shows it. A PATCH reads the same members,
    /// where any `null` resets its field (RFC 7396).
    static let feature = Shape(
        ["requires", "services", "accuracy", "description", "delivery", "background", "disabled", "minAppVersion"],
        nullable: ["minAppVersion"])
    /// `POST /v1/gates/query`: `{"devices": [{"userId", "deviceId"}], "features"}`.
    static let gateQuery = Shape(["features"], nested: ["devices": ["userId", "deviceId"]])
    /// `PUT /v1/experiments/{key}` (SPEC §16): `{"description", "prompt", "variants": [{"key",
    /// "weight"}], "control", "eligible": {"platforms", "statuses", "minAppVersion"}, "guard":
    /// {"maxDrop", "minAnswered"}}`; `null` where GET shows one: `guard`, and each condition of
    /// `eligible`. The values are `ExperimentDefinition`'s to check.
    static let experiment = Shape(
        ["description", "prompt", "control"],
        nested: [
            "variants": ["key", "weight"],
            "eligible": Shape(["platforms", "statuses", "minAppVersion"], nullable: ["platforms", "statuses", "minAppVersion"]),
            "guard": ["maxDrop", "minAnswered"],
        ],
        nullable: ["guard"])
    /// `POST /v1/experiments/{key}/stop`: `{"winner"}`, optional; `null` (as GET shows a
    /// running experiment's winner) or left out, the control.
    static let experimentStop = Shape(["winner"], nullable: ["winner"])

    /// Decodes `type` from `data` after checking its members against `shape`.
    static func decode<Value: Decodable>(_ type: Value.Type, from data: Data, shape: Shape) throws(APIError) -> Value {
        let root = try parse(data, shape: shape)
        try check(root, shape: shape, path: "", index: nil, refusingNulls: true)
        return try decodeValue(type, from: data)
    }

    /// Checks `data`'s members against `shape` alone, for a body another reader decodes (a
    /// feature's, `FeatureCatalog.parseDefinition`, or a merge patch of it). Not JSON: left to
    /// that reader. `refusingNulls`: a `null` in a field outside `shape.nullable` is refused
    /// too (a PUT's body; a merge patch's nulls are resets).
    static func checkMembers(of data: Data, shape: Shape, refusingNulls: Bool = false) throws(APIError) {
        let root: JSONNode
        do throws(APIError) {
            root = try parse(data, shape: shape)
        } catch {
            if error.error.code == .malformedJSON { return }
            throw error
        }
        try check(root, shape: shape, path: "", index: nil, refusingNulls: refusingNulls)
    }

    /// The body as a tree (`ClientJSON`): not JSON, too deep, or a name twice in an object is
    /// refused here. A repeat inside an array of objects that `shape` describes (a gate query's
    /// `devices`) carries the element's position as `index`.
    private static func parse(_ data: Data, shape: Shape) throws(APIError) -> JSONNode {
        do throws(ServiceError) {
            return try ClientJSON.parse(data) { path in
                guard path.steps.count > 2, case .member(let name) = path.steps[0], shape.nested[name] != nil,
                      case .element(let position) = path.steps[1] else { return (path.description, nil) }
                return (path.description, position)
            }
        } catch {
            throw APIError(error)
        }
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
    /// puts each element's position in the error, as SPEC §5's `index`. The parse refused any
    /// name given twice already.
    private static func check(_ node: JSONNode, shape: Shape, path: String, index: Int?, refusingNulls: Bool) throws(APIError) {
        guard let members = node.members else { return }
        for member in members {
            let field = path.isEmpty ? member.key : "\(path).\(member.key)"
            guard shape.fields.contains(member.key) else {
                let known = shape.fields.sorted().joined(separator: ", ")
                throw APIError(
                    .validationFailed, "\(field.prefix(128)): not a field of this request (its fields: \(known))", index: index)
            }
            if refusingNulls, member.value.isNull, !shape.nullable.contains(member.key) {
                throw APIError(.validationFailed, "\(field.prefix(128)): must not be null", index: index)
            }
        }
        for member in members {
            guard let nested = shape.nested[member.key] else { continue }
            let field = path.isEmpty ? member.key : "\(path).\(member.key)"
            if let items = member.value.array {
                for (position, item) in items.enumerated() {
                    try check(
                        item, shape: nested, path: "\(field)[\(position)]", index: index ?? (path.isEmpty ? position : nil),
                        refusingNulls: refusingNulls)
                }
            } else {
                try check(member.value, shape: nested, path: field, index: index, refusingNulls: refusingNulls)
            }
        }
    }
}
