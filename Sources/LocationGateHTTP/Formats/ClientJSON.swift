import Foundation
import LocationGateJSON
import LocationGateService

/// A client's JSON body as SPEC §14 reads it, parsed once (`JSONNode.parseStrictly`): a body
/// that is not JSON is 400 `malformedJSON`; one nested deeper than the parser goes, or with an
/// object anywhere in it that names a member twice (RFC 7493: JSON leaves open which one
/// counts, and two readers could take different ones), 400 `invalidRequest` naming it. Every
/// JSON body the API reads goes through here: events, configuration bodies, OFREP's.
enum ClientJSON {
    /// The body as a tree. `locate` names the field of a repeated member and the `index` it
    /// belongs to (SPEC §5: the event of a batch, the device of a gate query); by default the
    /// member's whole path and no index.
    static func parse(
        _ data: Data, locate: (JSONNode.Path) -> (field: String, index: Int?) = { ($0.description, nil) }
    ) throws(ServiceError) -> JSONNode {
        let parsed = data.withUnsafeBytes { (raw: UnsafeRawBufferPointer) -> Result<JSONNode, JSONNode.ParseError> in
            do throws(JSONNode.ParseError) {
                return .success(try JSONNode.parseStrictly(utf8: raw.bindMemory(to: UInt8.self)))
            } catch {
                return .failure(error)
            }
        }
        switch parsed {
        case .success(let root):
            return root
        case .failure(let failure):
            throw refusal(failure, locate: locate)
        }
    }

    /// The answer to a body `JSONNode.parseStrictly` refused.
    static func refusal(
        _ failure: JSONNode.ParseError, locate: (JSONNode.Path) -> (field: String, index: Int?) = { ($0.description, nil) }
    ) -> ServiceError {
        switch failure {
        case .invalid:
            return ServiceError(.malformedJSON, "the body is not valid JSON")
        case .tooDeep:
            return ServiceError(.invalidRequest, "the body nests arrays and objects more than \(JSONNode.maxDepth) deep")
        case .repeatedName(let path):
            let (field, index) = locate(path)
            return ServiceError(
                .invalidRequest, "\(field.prefix(128)): given twice; an object names each member at most once (RFC 7493)", index: index)
        }
    }
}
