-- wrk: the summary line every bench script prints, as JSON. Loaded with dofile by the scripts
-- beside it; Labs/bench runs wrk from the project's root, where this path resolves.
done = function(summary, latency, requests)
    io.write(string.format('{"requests": %d, "seconds": %.3f, "errors": %d, "non2xx": %d, "p50_ms": %.3f, "p99_ms": %.3f}\n',
        summary.requests, summary.duration / 1e6, summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout,
        summary.errors.status, latency:percentile(50) / 1000, latency:percentile(99) / 1000))
end
