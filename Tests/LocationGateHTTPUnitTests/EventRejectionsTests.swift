import HTTPTypes
import Hummingbird
import LocationGateService
import MetricsTestKit
import Testing

@testable import LocationGateHTTP

/// `locgate_rejections_total{code}` counts every refusal of `POST /v1/events` its handler
/// throws, under the code its answer carries: the decoder's, the log's and the database's alike.
@Suite("HTTP: the rejections counter", .timeLimit(.minutes(1)))
struct EventRejectionsTests {
    @Test("Validation, size, scope, version conflicts, rules, overload, outages and defects each count under their answer's code")
    func everyRefusal() throws {
        let metrics = TestMetrics()
        let rejections = EventRejections(factory: metrics)
        let refusals: [(error: any Error, code: String)] = [
            (ServiceError(.malformedJSON, "not JSON"), "malformedJSON"),
            (ServiceError(.validationFailed, "userId", index: 0), "validationFailed"),
            (APIError(.tooLarge, "the body is larger than 1048576 bytes"), "tooLarge"),
            (APIError(.forbidden, "this key's scope is read"), "forbidden"),
            (HTTPError(.unauthorized), "unauthorized"),
            (ServiceError(.versionConflict, "expected 1, at 2", index: 0), "versionConflict"),
            (ServiceError(.ruleViolation, "no prompt pending", index: 0), "ruleViolation"),
            (ServiceError(.overloaded, "busy"), "overloaded"),
            (ServiceError(.databaseUnavailable, "down"), "databaseUnavailable"),
            (CancellationError(), "internalError"),
        ]
        for refusal in refusals { rejections.count(refusal.error) }
        rejections.count(ServiceError(.versionConflict, "again", index: 3))
        for refusal in refusals {
            let expected: Int64 = refusal.code == "versionConflict" ? 2 : 1
            #expect(try metrics.expectCounter("locgate_rejections_total", [("code", refusal.code)]).totalValue == expected, "\(refusal.code)")
        }
    }
}
