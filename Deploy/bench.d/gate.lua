-- wrk: GET one feature's gate for a random device among the simulated population.
-- Env: LOCGATE_KEY, LOCGATE_DEVICES.
local key = os.getenv("LOCGATE_KEY")
local devices = tonumber(os.getenv("LOCGATE_DEVICES") or "1000")
math.randomseed(os.time())
request = function()
    local i = math.random(0, devices - 1)
    local path = "/v1/users/user-" .. math.floor(i / 2) .. "/devices/device-" .. i .. "/gates/nearby"
    return wrk.format("GET", path, { ["Authorization"] = "Bearer " .. key })
end
done = function(summary, latency, requests)
    io.write(string.format('{"requests": %d, "seconds": %.3f, "errors": %d, "non2xx": %d, "p50_ms": %.3f, "p99_ms": %.3f}\n',
        summary.requests, summary.duration / 1e6, summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout,
        summary.errors.status, latency:percentile(50) / 1000, latency:percentile(99) / 1000))
end
