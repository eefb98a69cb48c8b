import LocationGateService
import Metrics

/// `locgate_rejections_total{code}`: every `POST /v1/events` its handler refuses, by the code
/// its answer carries (SPEC §5's, as `ErrorBodyMiddleware` gives it): a body refused before
/// the log (`malformedJSON`, `validationFailed`, `tooLarge`, a key without the ingest scope),
/// a device token refused, and an append the log or the database refused (`versionConflict`,
/// `idConflict`, `ruleViolation`, `overloaded`, `databaseUnavailable`, `internalError`). What the key check
/// and the rate limit refuse before the handler runs is counted by status in `hb_requests`.
struct EventRejections: Sendable {
    private let factory: any MetricsFactory

    /// `factory` is the metrics system's unless a test gives its own.
    init(factory: any MetricsFactory = MetricsSystem.factory) {
        self.factory = factory
    }

    func count(_ error: any Error) {
        Counter(label: "locgate_rejections_total", dimensions: [("code", ErrorBodyMiddleware.code(of: error).rawValue)], factory: factory)
            .increment()
    }
}
