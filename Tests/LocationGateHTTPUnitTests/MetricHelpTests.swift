import Foundation
import Metrics
import Prometheus
import Testing

@testable import LocationGateHTTP

/// SPEC §14: every metric has HELP text. Every metric the sources register has a text in
/// `MetricHelp` (and the table names no other), and what `DocumentedMetricsFactory` registers
/// is emitted with a non-empty `# HELP` line, whatever kind of metric it is.
@Suite("Metrics: every metric has HELP text", .timeLimit(.minutes(1)))
struct MetricHelpTests {
    @Test("Every metric registered in the sources has a non-empty HELP text, and the table lists no other")
    func everyRegisteredMetric() throws {
        let registered = try MetricsDocumentationTests.registered()
        #expect(registered.count > 20, "the sources' metrics were found: \(registered.sorted())")
        for name in registered.sorted() {
            let text = MetricHelp.texts[name] ?? ""
            #expect(!text.trimmingCharacters(in: .whitespaces).isEmpty, "\(name) has no HELP text in MetricHelp")
        }
        #expect(Set(MetricHelp.texts.keys).subtracting(registered).sorted() == [], "HELP texts for metrics registered nowhere")
        #expect(MetricHelp.prometheusName("http.server.request.duration") == "http_server_request_duration")
    }

    /// Names with a `# TYPE` line, and the text of each `# HELP` line, in Prometheus text.
    static func parse(_ text: String) -> (types: [String], help: [String: String]) {
        var types: [String] = []
        var help: [String: String] = [:]
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: " ", maxSplits: 3, omittingEmptySubsequences: false)
            guard parts.count >= 3, parts[0] == "#" else { continue }
            if parts[1] == "TYPE" { types.append(String(parts[2])) }
            if parts[1] == "HELP" { help[String(parts[2])] = parts.count > 3 ? String(parts[3]) : "" }
        }
        return (types, help)
    }

    @Test("Counters, gauges, meters, timers, histograms and floating-point counters are emitted with their HELP line")
    func everyKind() throws {
        let registry = PrometheusCollectorRegistry()
        let factory = DocumentedMetricsFactory(registry: registry)
        let route = [("http.route", "/v1/events"), ("http.request.method", "POST"), ("http.response.status_code", "200")]
        Metrics.Counter(label: "hb.requests", dimensions: route, factory: factory).increment()
        let created = [("http.route", "/v1/apps"), ("http.request.method", "POST"), ("http.response.status_code", "201")]
        Metrics.Counter(label: "hb.requests", dimensions: created, factory: factory).increment()
        Metrics.Timer(label: "http.server.request.duration", dimensions: route, preferredDisplayUnit: .seconds, factory: factory)
            .recordNanoseconds(1_500_000)
        Meter(label: "http.server.active_requests", dimensions: [("http.request.method", "GET")], factory: factory).increment()
        Metrics.Gauge(label: "locgate_devices_cached", factory: factory).record(3)
        Recorder(label: "locgate_test_sizes", factory: factory).record(12.5)
        FloatingPointCounter(label: "locgate_retention_events_erased_total", factory: factory).increment(by: 2.0)
        let (types, help) = Self.parse(registry.emitToString())
        #expect(Set(types) == [
            "hb_requests", "http_server_request_duration", "http_server_active_requests", "locgate_devices_cached",
            "locgate_test_sizes", "locgate_retention_events_erased_total",
        ])
        for name in types {
            let text = help[name] ?? ""
            #expect(!text.isEmpty, "\(name) is emitted without HELP")
        }
        #expect(help["hb_requests"] == MetricHelp.texts["hb_requests"])
        // A metric the table does not know (a dependency's) still gets a HELP line.
        #expect(help["locgate_test_sizes"]?.contains("locgate_test_sizes") == true)
    }
}
