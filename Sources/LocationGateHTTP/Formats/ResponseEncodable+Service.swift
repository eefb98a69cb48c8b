import Hummingbird
import LocationAuthorization
import LocationGateService

// The service's answers that the API returns as they are: each is its own JSON (its `Encodable`
// conformance), written by the context's `SortedJSONEncoder`.

extension DeviceGates: ResponseEncodable {}
extension UserGates: ResponseEncodable {}
extension Feature: ResponseEncodable {}
extension FeaturePreview: ResponseEncodable {}
extension Experiment: ResponseEncodable {}
extension StateView: ResponseEncodable {}
extension ErasureRecord: ResponseEncodable {}
extension AuditPage: ResponseEncodable {}
