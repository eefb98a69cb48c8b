import Metrics
import Prometheus

/// The HELP text of every metric the server registers (SPEC §14 "Observability"), by its
/// Prometheus name (a character of the label outside `[A-Za-z0-9_:]` becomes `_`:
/// `hb.requests` is `hb_requests`). One table, beside docs/operations.md's, which says the same
/// at more length; `MetricHelpTests` holds it to the metrics the sources register.
enum MetricHelp {
    static let texts: [String: String] = [
        // Requests (`RequestMetricsMiddleware`).
        "hb_requests": "HTTP requests answered, by route template, method and status code.",
        "hb_request_errors": "HTTP requests answered with an error, by route template, method and status code (error_type).",
        "http_server_request_duration": "Seconds from a request's arrival until its answer is handed over (a push stream: until it ends), by route template, method and status code.",
        "http_server_active_requests": "HTTP requests in flight, open push streams included, by method.",
        // Ingest.
        "locgate_events_appended_total": "New events this process stored (duplicates not counted).",
        "locgate_rejections_total": "POST /v1/events requests refused after the key check and the rate limit, by the error code of the answer.",
        "locgate_event_batches_rejected_total": "Appends that reached the log and failed there (a conflict, a rule, the database).",
        "locgate_group_commit_isolations_total": "Shared transactions the database refused for a reason other than an outage, then appended request by request.",
        "locgate_group_commits_total": "Shared transactions committed by group commit.",
        "locgate_group_commit_microseconds_total": "Time group commits took, from a group's first statement to its commit's answer.",
        "locgate_group_commit_database_microseconds_total": "Of the group commits' time, the time spent waiting for the database's answers.",
        "locgate_group_commit_spills_total": "Drainers of group commits started beside the running ones, because a request had waited longer than the spill time (a lock, a slow disk).",
        "locgate_group_commit_events_total": "Events (new and duplicate) of the requests that group commits answered.",
        "locgate_group_commit_queued_events": "Events waiting for a group commit.",
        // The database and the caches.
        "locgate_pool_waiting": "Callers waiting for a database connection.",
        "locgate_devices_cached": "Devices in the device state cache.",
        "locgate_device_cache_bytes": "Bytes of the device state cache, as counted against its budget.",
        "locgate_device_cache_budget_bytes": "The device state cache's byte budget (--cache-memory).",
        "locgate_keys_cached": "API keys remembered by this process, known and unknown.",
        "locgate_key_lookups_total": "API keys this process looked up in the database.",
        "locgate_caches_following": "1 while the change notifications are followed and the caches may answer; 0 while every read goes to PostgreSQL.",
        "locgate_cache_resyncs_total": "Times LISTEN was (re)established and every cache emptied.",
        "locgate_global_order_horizon_lag": "Transaction ids between the oldest running transaction and the next one.",
        "locgate_events_estimated": "The planner's estimate of the events stored (-1 before the table was first analyzed).",
        "locgate_standby_read_fallbacks_total": "Reads meant for the standby that read the primary instead.",
        // Push streams.
        "locgate_streams_open": "Push streams (OFREP event streams and change feeds) open on this process.",
        "locgate_streams_dropped_total": "Push streams dropped because their reader left 256 messages unread.",
        // Retention and erasure.
        "locgate_retention_runs_total": "Runs of the retention schedule on this process, skipped ones included.",
        "locgate_retention_events_erased_total": "Events the retention runs erased.",
        "locgate_retention_run_duration_seconds": "Seconds each run of the retention schedule took.",
        "locgate_erasures_performed_total": "Erasures whose first phase this process finished.",
        "locgate_erasure_pages_total": "Steps of erasures (a page of at most 2,000 events each) this process committed.",
        "locgate_erasure_events_erased_total": "Events the erasure steps erased.",
        "locgate_erasure_step_failures_total": "Erasure steps that failed and were left for a retry after a backoff.",
    ]

    /// A metric's Prometheus name, as swift-prometheus makes it from a swift-metrics label.
    static func prometheusName(_ label: String) -> String {
        String(label.map { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == ":") ? $0 : "_" })
    }

    /// The HELP text of the metric of `label`. A metric missing from the table (one a
    /// dependency registers) still gets one, naming it.
    static func text(forLabel label: String) -> String {
        let name = prometheusName(label)
        return texts[name] ?? "The \(name) metric of LocationGate (see docs/operations.md)."
    }
}

/// swift-prometheus's metrics factory, with every metric's HELP text from `MetricHelp`.
///
/// `PrometheusMetricsFactory` registers every metric with empty help, and the registry fixes a
/// metric's help when it is first registered (a later registration with other text stops the
/// process), so the help cannot be added afterwards: this factory registers each metric with
/// its text from the start, through the registry's descriptor API, with the same names, labels
/// and buckets as `PrometheusMetricsFactory`.
public struct DocumentedMetricsFactory: MetricsFactory {
    public let registry: PrometheusCollectorRegistry
    private let durationBuckets: [Duration]
    private let valueBuckets: [Double]

    public init(registry: PrometheusCollectorRegistry) {
        self.registry = registry
        let defaults = PrometheusMetricsFactory(registry: registry)
        self.durationBuckets = defaults.defaultDurationHistogramBuckets
        self.valueBuckets = defaults.defaultValueHistogramBuckets
    }

    private func descriptor(_ label: String) -> MetricNameDescriptor {
        MetricNameDescriptor(metricName: label, unitName: "", helpText: MetricHelp.text(forLabel: label))
    }

    public func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler {
        registry.makeCounter(descriptor: descriptor(label), labels: dimensions)
    }

    public func makeFloatingPointCounter(label: String, dimensions: [(String, String)]) -> any FloatingPointCounterHandler {
        registry.makeCounter(descriptor: descriptor(label), labels: dimensions)
    }

    public func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
        guard aggregate else { return registry.makeGauge(descriptor: descriptor(label), labels: dimensions) }
        return registry.makeValueHistogram(descriptor: descriptor(label), labels: dimensions, buckets: valueBuckets)
    }

    public func makeMeter(label: String, dimensions: [(String, String)]) -> any MeterHandler {
        registry.makeGauge(descriptor: descriptor(label), labels: dimensions)
    }

    public func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler {
        registry.makeDurationHistogram(descriptor: descriptor(label), labels: dimensions, buckets: durationBuckets)
    }

    public func destroyCounter(_ handler: any CounterHandler) {
        if let counter = handler as? Prometheus.Counter { registry.unregisterCounter(counter) }
    }

    public func destroyFloatingPointCounter(_ handler: any FloatingPointCounterHandler) {
        if let counter = handler as? Prometheus.Counter { registry.unregisterCounter(counter) }
    }

    public func destroyRecorder(_ handler: any RecorderHandler) {
        if let gauge = handler as? Prometheus.Gauge {
            registry.unregisterGauge(gauge)
        } else if let histogram = handler as? ValueHistogram {
            registry.unregisterValueHistogram(histogram)
        }
    }

    public func destroyMeter(_ handler: any MeterHandler) {
        if let gauge = handler as? Prometheus.Gauge { registry.unregisterGauge(gauge) }
    }

    public func destroyTimer(_ handler: any TimerHandler) {
        if let histogram = handler as? DurationHistogram { registry.unregisterDurationHistogram(histogram) }
    }
}
