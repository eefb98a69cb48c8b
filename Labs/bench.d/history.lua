-- wrk: GET the history of a random device among the simulated population.
-- Env: LOCGATE_KEY, LOCGATE_DEVICES.
local key = os.getenv("LOCGATE_KEY")
local devices = tonumber(os.getenv("LOCGATE_DEVICES") or "1000")
math.randomseed(os.time())
request = function()
    local i = math.random(0, devices - 1)
    local path = "/v1/users/user-" .. math.floor(i / 2) .. "/devices/device-" .. i .. "/history"
    return wrk.format("GET", path, { ["Authorization"] = "Bearer " .. key })
end
dofile("Labs/bench.d/report.lua")
